from pkgcat.cli import main

main()

"""The served APT repository: publishing .deb files, its indexes, keys and downloads."""

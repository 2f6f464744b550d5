"""An uploaded image: checked to be what it claims, bounded, and re-encoded with Pillow.

The bytes are read by Pillow, which tells the format from the file itself: a file that
claims to be a PNG (``image/png``) must be one, a JPEG likewise; any other format, or
none, is refused. The size in bytes is bounded before Pillow sees it, and the pixels
(``PKGCAT_SHOP_IMAGE_MAX_PIXELS``) from the header, before any pixel is decoded: a small
file that declares a huge image (a decompression bomb) is refused without being expanded.
Pillow's own bomb check is made an error too, as a second guard. What is kept is the image
re-encoded (no metadata, no trailing bytes, no second frame), stored under the SHA-256 of
the new bytes.
"""

from __future__ import annotations

import io
import warnings

from PIL import Image, UnidentifiedImageError

from pkgcat.shop.errors import ShopRefused

CLAIMS = {"image/png": "PNG", "image/jpeg": "JPEG"}
"""The media types an upload may claim, and the format Pillow must find."""
SUFFIX = {"PNG": "png", "JPEG": "jpg"}


def checked(
    field: str, data: bytes, claimed: str, *, max_bytes: int, max_pixels: int
) -> tuple[bytes, str, int, int]:
    """The image re-encoded, its suffix (``png``, ``jpg``), width and height; else
    :class:`ShopRefused` naming ``field``."""
    wanted = CLAIMS.get(claimed.partition(";")[0].strip().lower())
    if wanted is None:
        raise ShopRefused(field, f"must be image/png or image/jpeg, not {claimed[:60]!r}")
    if not data:
        raise ShopRefused(field, "is empty")
    if len(data) > max_bytes:
        raise ShopRefused(field, f"is {len(data)} bytes; at most {max_bytes} are taken")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            image = Image.open(io.BytesIO(data), formats=[wanted])
            width, height = image.size
            if width < 1 or height < 1 or width * height > max_pixels:
                raise ShopRefused(
                    field, f"is {width}x{height} pixels; at most {max_pixels} pixels are taken"
                )
            image.load()
    except ShopRefused:
        raise
    except (Image.DecompressionBombError, Image.DecompressionBombWarning):
        raise ShopRefused(field, "declares more pixels than an image may have") from None
    except UnidentifiedImageError:
        raise ShopRefused(field, f"is not a {wanted} image (it claims {claimed})") from None
    except (OSError, SyntaxError, ValueError) as error:
        raise ShopRefused(field, f"is a damaged {wanted} image ({str(error)[:80]})") from None
    out = io.BytesIO()
    if wanted == "PNG":
        mode = "RGBA" if image.mode in ("RGBA", "LA", "P", "PA") else "RGB"
        image.convert(mode).save(out, "PNG", optimize=True)
    else:
        image.convert("RGB").save(out, "JPEG", quality=88, optimize=True)
    return out.getvalue(), SUFFIX[wanted], width, height

"""Minimal PNG reader (stdlib zlib) for checking headless-Chromium screenshots:
8-bit RGB or RGBA, non-interlaced, all five scanline filters.

read_png(path) -> (width, height, rows) with rows[y] a bytes of RGB(A) pixels.
"""

import struct
import zlib


def _paeth(a, b, c):
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    if pa <= pb and pa <= pc:
        return a
    return b if pb <= pc else c


def read_png(path):
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("%s is not a PNG" % path)
    pos, idat, header = 8, [], None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat.append(body)
        elif kind == b"IEND":
            break
    width, height, depth, colour, _, _, interlace = header
    if depth != 8 or colour not in (2, 6) or interlace:
        raise ValueError("unsupported PNG: depth %d colour type %d interlace %d"
                         % (depth, colour, interlace))
    bpp = 3 if colour == 2 else 4
    raw = zlib.decompress(b"".join(idat))
    stride = width * bpp
    rows, prev, i = [], bytearray(stride), 0
    for _ in range(height):
        ftype = raw[i]
        line = bytearray(raw[i + 1:i + 1 + stride])
        i += 1 + stride
        for x in range(stride):
            a = line[x - bpp] if x >= bpp else 0
            b = prev[x]
            c = prev[x - bpp] if x >= bpp else 0
            if ftype == 1:
                line[x] = (line[x] + a) & 0xFF
            elif ftype == 2:
                line[x] = (line[x] + b) & 0xFF
            elif ftype == 3:
                line[x] = (line[x] + ((a + b) >> 1)) & 0xFF
            elif ftype == 4:
                line[x] = (line[x] + _paeth(a, b, c)) & 0xFF
        rows.append(bytes(line))
        prev = line
    return width, height, rows, bpp


def colours_in(path, y0, y1, x0=0, x1=None):
    """Set of (r, g, b) colours in the rectangle [x0, x1) x [y0, y1)."""
    width, height, rows, bpp = read_png(path)
    x1 = width if x1 is None else min(x1, width)
    found = set()
    for y in range(y0, min(y1, height)):
        row = rows[y]
        for x in range(x0, x1):
            found.add(tuple(row[x * bpp:x * bpp + 3]))
    return found

#!/usr/bin/env python3
"""collage.py - joins PNG renders side by side into one PNG (docs/img/volumes.png).
Standard library only (zlib + struct): reads 8-bit grey/RGB/RGBA non-interlaced PNGs.
Usage: python3 docs/img/collage.py OUT.png IN1.png IN2.png ...  (make_volumes.sh calls it)"""
import zlib, struct
def write_png(path, w, h, rows, ch=1):
    def chunk(t, d): return struct.pack('>I', len(d)) + t + d + struct.pack('>I', zlib.crc32(t + d) & 0xffffffff)
    raw = b''.join(b'\0' + bytes(r) for r in rows)
    ct = {1: 0, 3: 2, 4: 6}[ch]
    open(path, 'wb').write(b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', w, h, 8, ct, 0, 0, 0)) + chunk(b'IDAT', zlib.compress(raw, 9)) + chunk(b'IEND', b''))

import sys, zlib, struct
def read_png(path):
    d = open(path, 'rb').read(); pos = 8; idat = b''; w = h = ct = 0
    while pos < len(d):
        n, = struct.unpack('>I', d[pos:pos+4]); t = d[pos+4:pos+8]; c = d[pos+8:pos+8+n]; pos += 12 + n
        if t == b'IHDR': w, h, bd, ct = struct.unpack('>IIBB', c[:10])
        elif t == b'IDAT': idat += c
    ch = {0: 1, 2: 3, 6: 4}[ct]; raw = zlib.decompress(idat); rows = []; prev = bytearray(w*ch); stride = w*ch; p = 0
    for y in range(h):
        f = raw[p]; line = bytearray(raw[p+1:p+1+stride]); p += 1 + stride
        for i in range(stride):
            a = line[i-ch] if i >= ch else 0; b = prev[i]; c2 = prev[i-ch] if i >= ch else 0
            if f == 1: line[i] = (line[i] + a) & 255
            elif f == 2: line[i] = (line[i] + b) & 255
            elif f == 3: line[i] = (line[i] + (a + b)//2) & 255
            elif f == 4:
                pp = a + b - c2; pa, pb, pc = abs(pp-a), abs(pp-b), abs(pp-c2)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c2)) & 255
        rows.append([tuple(line[x*ch:x*ch+3]) if ch >= 3 else (line[x],)*3 for x in range(w)]); prev = line
    return w, h, rows
imgs = [read_png(p) for p in sys.argv[2:]]
H = max(i[1] for i in imgs); out = []
for y in range(H):
    r = []
    for w, h, rows in imgs: r += [c for px in (rows[y] if y < h else [(255,255,255)]*w) for c in px]
    out.append(r)
write_png(sys.argv[1], sum(i[0] for i in imgs), H, out, 3)

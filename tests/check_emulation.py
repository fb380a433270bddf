#!/usr/bin/env python3
"""The AVX-512 emulation (src/kernels/simd/avx512_emu.h) defines exactly the _mm512_* intrinsics
that the rest of src/ uses: a missing one would break the emulated test build, an extra
one is dead code that nothing tests.

usage: check_emulation.py SRC_DIR
"""
import pathlib
import re
import sys

src = pathlib.Path(sys.argv[1])
emu = src / "kernels" / "simd" / "avx512_emu.h"
name = re.compile(r"\b_mm512_[a-z0-9_]+\b")
used = set()
for f in sorted(src.rglob("*")):
    if f.suffix in (".c", ".h") and f != emu:
        used |= set(name.findall(f.read_text()))
emulated = set(re.findall(r"^#define (_mm512_[a-z0-9_]+) ", emu.read_text(), re.M))
missing, unused = sorted(used - emulated), sorted(emulated - used)
print(f"{len(used)} _mm512 intrinsics used in {src}, {len(emulated)} emulated")
for n in missing:
    print(f"FAIL: {n} is used but not emulated")
for n in unused:
    print(f"FAIL: {n} is emulated but no kernel uses it")
sys.exit(1 if missing or unused or not used else 0)

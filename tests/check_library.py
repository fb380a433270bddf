#!/usr/bin/env python3
"""Checks on the built library files (any target architecture: readelf reads every ELF).

usage: check_library.py READELF LIBQKV_SO LIBQKV_A
  - NEEDED of the shared library: libc, libm, libpthread, the dynamic loader, nothing else
  - SONAME libqkv.so.<major>
  - every exported symbol starts with qkv_
  - no object in the static library has a constructor (.init_array / .ctors)
  - only the drivers and the built-in thread pool allocate: every other object (each
    kernel compiled with an ISA's flags, the packing routines, dispatch) calls no
    allocator, and no object but the pool (qkv_threadpool_create) starts threads. The
    drivers are named in DRIVERS; a new object is a kernel until listed there.
"""
import re
import subprocess
import sys

readelf, so, ar = sys.argv[1:4]
fails = []


def run(*args):
    return subprocess.run([readelf, "-W", *args], check=True, capture_output=True, text=True).stdout


dyn = run("-d", so)
needed = re.findall(r"\(NEEDED\)\s+Shared library: \[(.+?)\]", dyn)
allowed = re.compile(r"^(libc\.so\.\d+|libm\.so\.\d+|libpthread\.so\.\d+|ld-linux.*\.so\.\d+)$")
extra = [n for n in needed if not allowed.match(n)]
if extra:
    fails.append(f"unexpected NEEDED: {extra}")
soname = re.findall(r"\(SONAME\)\s+Library soname: \[(.+?)\]", dyn)
if not soname or not re.match(r"^libqkv\.so\.\d+$", soname[0]):
    fails.append(f"SONAME {soname}")

exported = []
for line in run("--dyn-syms", so).splitlines():
    f = line.split()
    # Num: Value Size Type Bind Vis Ndx Name
    if len(f) >= 8 and f[4] in ("GLOBAL", "WEAK") and f[6] != "UND" and f[3] in ("FUNC", "OBJECT"):
        exported.append(f[7].split("@")[0])
bad_exports = [s for s in exported if not s.startswith("qkv_")]
if bad_exports:
    fails.append(f"exported symbols outside qkv_: {bad_exports}")

member = None
ctor_members = []
for line in run("-S", ar).splitlines():
    m = re.match(r"^File: .*\((.+)\)$", line)
    if m:
        member = m.group(1)
    elif re.search(r"\s\.(init_array|ctors)\b", line):
        ctor_members.append(member)
if ctor_members:
    fails.append(f"constructors in: {ctor_members}")

undefined = {}
member = None
for line in run("-s", ar).splitlines():
    m = re.match(r"^File: .*\((.+)\)$", line)
    if m:
        member = m.group(1)
        continue
    f = line.split()
    if member and len(f) >= 8 and f[6] == "UND":
        undefined.setdefault(member, set()).add(f[7].split("@")[0])
alloc = {"malloc", "calloc", "realloc", "free", "aligned_alloc", "posix_memalign"}
# the objects allowed to allocate: the GEMM driver and the attention drivers (their
# workspaces, one allocation per call when the caller gives none)
DRIVERS = re.compile(r"(^|_)(driver|core|sdpa|mha|simple|threadpool)\.c\.o(bj)?$")
POOL = re.compile(r"(^|_)threadpool\.c\.o(bj)?$")
members = set(undefined)
for line in run("-h", ar).splitlines():
    m = re.match(r"^File: .*\((.+)\)$", line)
    if m:
        members.add(m.group(1))
kernels = sorted(m for m in members if not DRIVERS.search(m))
for member, syms in sorted(undefined.items()):
    if not DRIVERS.search(member) and syms & alloc:
        fails.append(f"kernel object {member} allocates: {sorted(syms & alloc)}")
    if "pthread_create" in syms and not POOL.search(member):
        fails.append(f"{member} starts threads")

print(f"NEEDED: {', '.join(needed)}")
print(f"SONAME: {soname[0] if soname else '-'}")
print(f"exported: {len(exported)} symbols, all qkv_*" if not bad_exports else "exported: FAIL")
print(f"no allocator in {len(kernels)} non-driver objects: {', '.join(kernels)}")
if not any(re.search(r"(^|_)kernels_scalar\.c\.o", k) for k in kernels):
    fails.append("no per-ISA kernel unit (src/kernels/<isa>.c) found among the objects: naming changed?")
for f in fails:
    print("FAIL:", f)
sys.exit(1 if fails else 0)

#!/usr/bin/env python3
"""Writes a circom-format circuit and its witness without circom:
a squaring chain x_{i+1} = x_i^2 + c_i (c_i = i + 1) of N constraints, then
out = x_N * 1, with `out` public and x_0 private. circom2 (circom built to
WebAssembly) takes ~15 minutes to compile 2^16 constraints on 2 cores, so
files for 2^20 are made here instead; both provers read the same files.

Over BLS12-381's scalar field, or BN254's with --bn254.

usage: gen_chain.py [--bn254] N OUT_STEM [X0]   ->  OUT_STEM.r1cs, OUT_STEM.wtns
"""
import struct
import sys

BLS12_381_R = 0x73EDA753299D7D483339D80809A1D80553BDA402FFFE5BFEFFFFFFFF00000001
BN254_R = 0x30644E72E131A029B85045B68181585D2833E84879B9709143E1F593F0000001
R = BLS12_381_R


def fe(v):
    return (v % R).to_bytes(32, "little")


def container(magic, version, sections):
    out = bytearray(magic + struct.pack("<II", version, len(sections)))
    for ty, data in sections:
        out += struct.pack("<IQ", ty, len(data)) + data
    return out


def main():
    global R
    args = sys.argv[1:]
    if args and args[0] == "--bn254":
        R = BN254_R
        args = args[1:]
    n = int(args[0])
    stem = args[1]
    x0 = int(args[2]) if len(args) > 2 else 12345
    # Wires: 0 one, 1 out (public output), 2 x_0 (private input), 2+i x_i.
    n_wires = 3 + n
    header = struct.pack("<I", 32) + R.to_bytes(32, "little") + struct.pack("<IIIIQI", n_wires, 1, 0, 1, n_wires, n + 1)
    one = fe(1)
    cons = bytearray()
    for i in range(n):
        xi = struct.pack("<I", 2 + i) + one
        cons += struct.pack("<I", 1) + xi  # A = x_i
        cons += struct.pack("<I", 1) + xi  # B = x_i
        # C = x_{i+1} - c_i
        cons += struct.pack("<I", 2) + struct.pack("<I", 0) + fe(-(i + 1)) + struct.pack("<I", 3 + i) + one
    cons += struct.pack("<I", 1) + struct.pack("<I", 2 + n) + one  # A = x_N
    cons += struct.pack("<I", 1) + struct.pack("<I", 0) + one  # B = 1
    cons += struct.pack("<I", 1) + struct.pack("<I", 1) + one  # C = out
    labels = b"".join(struct.pack("<Q", w) for w in range(n_wires))
    with open(stem + ".r1cs", "wb") as f:
        f.write(container(b"r1cs", 1, [(1, header), (2, bytes(cons)), (3, labels)]))
    xs = [x0 % R]
    for i in range(n):
        xs.append((xs[-1] * xs[-1] + i + 1) % R)
    values = [1, xs[-1]] + xs
    wheader = struct.pack("<I", 32) + R.to_bytes(32, "little") + struct.pack("<I", len(values))
    with open(stem + ".wtns", "wb") as f:
        f.write(container(b"wtns", 2, [(1, wheader), (2, b"".join(fe(v) for v in values))]))


if __name__ == "__main__":
    main()

"""Trace bytes written by hand, for tests that damage or forge traces
(tests/integration/rel_badinput.sh); the layout is docs/trace-format.md's.

crc32c(b): the checksum of chunk headers and payloads (Castagnoli,
reflected, bit by bit: slow and obviously right).
plain(payloads): an uncompressed trace file (file flags 0) whose chunks,
numbered from 0, carry the given payloads.
"""
import struct


def crc32c(b):
    crc = 0xffffffff
    for x in b:
        crc ^= x
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82f63b78 & -(crc & 1))
    return crc ^ 0xffffffff


def plain(payloads):
    out = bytearray(b'GCSPYTRC' + struct.pack('<HHIQQ', 1, 0, 32, 0, 0))
    for seq, p in enumerate(payloads):
        h = struct.pack('<5I', 0x4B435347, seq, len(p), len(p), crc32c(p))
        out += h + struct.pack('<I', crc32c(h)) + p
    return bytes(out)

"""Integer encodings of binlog bodies: MySQL's packed length and the varlen of mysql::serialization."""

from __future__ import annotations


def read_packed(b: bytes | memoryview, pos: int) -> tuple[int, int]:
    """net_field_length: 1 byte < 251, else 0xfc +2, 0xfd +3, 0xfe +8 bytes (little-endian)."""
    first = b[pos]
    if first < 251:
        return first, pos + 1
    if first == 0xFC:
        return int.from_bytes(b[pos + 1:pos + 3], "little"), pos + 3
    if first == 0xFD:
        return int.from_bytes(b[pos + 1:pos + 4], "little"), pos + 4
    if first == 0xFE:
        return int.from_bytes(b[pos + 1:pos + 9], "little"), pos + 9
    raise ValueError(f"invalid packed integer prefix 0x{first:02x}")


def read_unsigned(b: bytes | memoryview, pos: int) -> tuple[int, int]:
    """mysql::serialization varlen (MySQL 8.3+ tagged GTID events).

    The count of trailing one bits of the first byte is the number of bytes that
    follow; the little-endian whole, shifted right by that count + 1, is the value.
    A first byte of 0xff means eight bytes follow and hold the value as is.
    """
    first = b[pos]
    if first == 0xFF:
        return int.from_bytes(b[pos + 1:pos + 9], "little"), pos + 9
    extra = 0
    while first & (1 << extra):
        extra += 1
    if pos + 1 + extra > len(b):
        raise ValueError("varlen integer runs past the end of the event")
    whole = int.from_bytes(b[pos:pos + 1 + extra], "little")
    return whole >> (extra + 1), pos + 1 + extra


def read_signed(b: bytes | memoryview, pos: int) -> tuple[int, int]:
    """Signed varlen: zig-zag over the unsigned form."""
    u, pos = read_unsigned(b, pos)
    return (u >> 1) ^ -(u & 1), pos

#!/usr/bin/env python3
"""An independent reference for Ubiquity's FastCDC chunker, for tests only.

Written from the pseudo-code of Algorithm 1 in Xia et al., "FastCDC: a Fast and Efficient Content-Defined
Chunking Approach for Data Deduplication" (USENIX ATC 2016; the TPDS 2020 version keeps the same algorithm),
not from the Swift code. Only the choices the paper leaves open are fixed here, and the Swift side documents the
same ones (Sources/SyncEngine/Chunking):

- the Gear table: 256 consecutive outputs of SplitMix64 started from the state 0x5562697175697479 (the ASCII bytes
  of "Ubiquity");
- the masks: a mask with n one bits has them at bit positions 63 - floor(k * 64 / n) for k = 0 ..< n (spread over
  the whole 64-bit fingerprint, as the paper's zero-padded masks are); with normalisation level L and an average
  size of 2^b, MaskS has b + L one bits and MaskL has b - L;
- a returned breakpoint i is a chunk length: the chunk is src[0:i] (as in the paper, the byte that matched the
  mask starts the next chunk).

Usage:
    fastcdc_reference.py cut MIN AVG MAX LEVEL INPUT OUTPUT   # writes the cut points of INPUT's bytes as JSON
    fastcdc_reference.py vectors > fastcdc-vectors.json        # the checked-in test vectors
"""

import hashlib
import json
import sys

M64 = (1 << 64) - 1
GEAR_SEED = 0x5562697175697479  # b"Ubiquity"


def splitmix64(state):
    """Yields SplitMix64 outputs from `state` (Steele, Lea and Flood, 2014)."""
    while True:
        state = (state + 0x9E3779B97F4A7C15) & M64
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
        yield z ^ (z >> 31)


def gear_table():
    generator = splitmix64(GEAR_SEED)
    return [next(generator) for _ in range(256)]


GEAR = gear_table()


def spread_mask(ones):
    """A 64-bit mask with `ones` one bits spread evenly from bit 63 downwards."""
    mask = 0
    for k in range(ones):
        mask |= 1 << (63 - (k * 64) // ones)
    return mask


def splitmix_bytes(count, seed):
    """`count` bytes of SplitMix64 output from `seed`, each 64-bit word little-endian, the last one truncated."""
    generator = splitmix64(seed)
    words = (count + 7) // 8
    return b"".join(next(generator).to_bytes(8, "little") for _ in range(words))[:count]


class FastCDC:
    def __init__(self, min_size, avg_size, max_size, level=2):
        bits = avg_size.bit_length() - 1
        assert avg_size == 1 << bits and 0 < min_size < avg_size < max_size
        self.min_size, self.normal_size, self.max_size = min_size, avg_size, max_size
        self.mask_s = spread_mask(bits + level)
        self.mask_l = spread_mask(bits - level)

    def breakpoint(self, src, start, n):
        """Algorithm 1: the length of the chunk starting at src[start], with n bytes left."""
        mask_s, mask_l, gear = self.mask_s, self.mask_l, GEAR
        normal_size = self.normal_size
        fp = 0
        i = self.min_size
        if n <= self.min_size:
            return n
        if n >= self.max_size:
            n = self.max_size
        elif n <= normal_size:
            normal_size = n
        while i < normal_size:
            fp = ((fp << 1) + gear[src[start + i]]) & M64
            if not fp & mask_s:
                return i
            i += 1
        while i < n:
            fp = ((fp << 1) + gear[src[start + i]]) & M64
            if not fp & mask_l:
                return i
            i += 1
        return i

    def cut_points(self, src):
        """The end offset of every chunk of `src`, in order."""
        points, start = [], 0
        while start < len(src):
            start += self.breakpoint(src, start, len(src) - start)
            points.append(start)
        return points


def vector(name, chunker, data, generator, config):
    points = chunker.cut_points(data)
    starts = [0] + points[:-1]
    entry = {
        "name": name,
        "configuration": config,
        "strictMask": "0x%016x" % chunker.mask_s,
        "looseMask": "0x%016x" % chunker.mask_l,
        "input": generator,
        "inputSHA256": hashlib.sha256(data).hexdigest(),
        "cutPoints": points,
    }
    if len(points) <= 40:
        entry["chunkSHA256"] = [hashlib.sha256(data[a:b]).hexdigest() for a, b in zip(starts, points)]
    return entry


def vectors():
    default = {"minimumSize": 16384, "averageSize": 65536, "maximumSize": 262144, "normalizationLevel": 2}
    small = {"minimumSize": 256, "averageSize": 1024, "maximumSize": 4096, "normalizationLevel": 2}
    odd = {"minimumSize": 1000, "averageSize": 4096, "maximumSize": 10000, "normalizationLevel": 1}

    def make(config):
        return FastCDC(config["minimumSize"], config["averageSize"], config["maximumSize"],
                       config["normalizationLevel"])

    result = []
    chunker = make(default)
    for name, seed, count in [("1MiB", 1, 1 << 20), ("8MiB", 2, 8 << 20)]:
        data = splitmix_bytes(count, seed)
        result.append(vector(name, chunker, data, {"kind": "splitmix64", "seed": seed, "count": count}, default))
    data = bytes(1 << 20)
    result.append(vector("zeros-1MiB", chunker, data, {"kind": "zeros", "count": len(data)}, default))
    minimum, maximum = default["minimumSize"], default["maximumSize"]
    for name, count in [("empty", 0), ("1 byte", 1), ("min-1", minimum - 1), ("min", minimum),
                        ("min+1", minimum + 1), ("max", maximum), ("max+1", maximum + 1)]:
        data = splitmix_bytes(count, 3)
        result.append(vector(name, chunker, data, {"kind": "splitmix64", "seed": 3, "count": count}, default))
    for config_name, config, seed in [("small", small, 4), ("odd", odd, 5)]:
        data = splitmix_bytes(64 << 10, seed)
        generator = {"kind": "splitmix64", "seed": seed, "count": len(data)}
        result.append(vector(config_name + "-64KiB", make(config), data, generator, config))
    return {
        "about": "FastCDC test vectors produced by Tests/SyncEngineTests/Vectors/fastcdc_reference.py (`vectors`), "
        "the independent Python reference written from the paper's pseudo-code, not by the Swift chunker. "
        "cutPoints are the end offsets of the chunks; inputs are SplitMix64 words from `seed`, little-endian, "
        "the last word truncated to `count` bytes, or `count` zero bytes.",
        "gearSeed": "0x5562697175697479",
        "gearTableHead": ["0x%016x" % value for value in GEAR[:4]],
        "gearTableTail": ["0x%016x" % value for value in GEAR[-4:]],
        "vectors": result,
    }


def main(arguments):
    if arguments[:1] == ["vectors"]:
        json.dump(vectors(), sys.stdout, indent=1)
        sys.stdout.write("\n")
    elif arguments[:1] == ["cut"] and len(arguments) == 7:
        minimum, average, maximum, level = (int(value) for value in arguments[1:5])
        with open(arguments[5], "rb") as source:
            data = source.read()
        with open(arguments[6], "w") as destination:
            json.dump(FastCDC(minimum, average, maximum, level).cut_points(data), destination)
    else:
        sys.stderr.write(__doc__)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

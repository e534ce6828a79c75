"""PyTorch on the cases of `benches/scatter_nd.rs`'s `deterministic` group: `index_add` of f32
rows of 64 onto as many data rows as update rows, keeping the input, in the three index
patterns (unique rows, 7 hot targets, a power law drawn by the same generator), racy and in
PyTorch's deterministic mode (`torch.use_deterministic_algorithms`).

Usage on a CUDA machine: python3 benches/deterministic_peers.py [LOG2 ...] (default 24 26).
Prints ms per call: the median of 7 batches of 8 calls queued between two syncs, each call on
its own input, as the Rust bench queues them.
"""
import statistics
import sys
import time

import torch

QUEUED = 8
ROW = 64


def pattern(name, m):
    """The target rows of `m` update rows onto `m` data rows (the bench's `pattern`)."""
    if name == "unique":
        return [i * 7919 % m for i in range(m)]
    if name == "7 hot":
        return [i % 7 for i in range(m)]
    state, mask, out = 0x9E3779B97F4A7C15, (1 << 64) - 1, []
    for _ in range(m):
        state ^= (state << 13) & mask
        state ^= state >> 7
        state ^= (state << 17) & mask
        u = ((state >> 11) + 1.0) / float(1 << 53)
        out.append(min(int((m + 1.0) ** u - 1.0), m - 1))
    return out


def median_ms(call, inputs):
    for _ in range(2):
        keep = [call(x) for x in inputs]
        torch.cuda.synchronize()
        del keep
    times = []
    for _ in range(7):
        start = time.perf_counter()
        keep = [call(x) for x in inputs]
        torch.cuda.synchronize()
        times.append((time.perf_counter() - start) * 1e3 / len(inputs))
        del keep
    return statistics.median(times)


def main():
    sizes = [int(a) for a in sys.argv[1:]] or [24, 26]
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}")
    print("| pattern | " + " | ".join(f"2^{s} racy / deterministic mode" for s in sizes) + " |")
    print("|---|" + "---|" * len(sizes))
    cells = {}
    for log2 in sizes:
        m = (1 << log2) // ROW
        base = torch.arange(m * ROW, device="cuda", dtype=torch.int64)
        inputs = [((base + seed) % 7).float().reshape(m, ROW) for seed in range(QUEUED)]
        updates = ((base % 1013).float() * 0.001 - 0.5).reshape(m, ROW)
        for name in ("unique", "7 hot", "power law"):
            index = torch.tensor(pattern(name, m), device="cuda")
            timed = []
            for deterministic in (False, True):
                torch.use_deterministic_algorithms(deterministic)
                timed.append(median_ms(lambda x: x.index_add(0, index, updates), inputs))
            torch.use_deterministic_algorithms(False)
            cells.setdefault(name, []).append(f"{timed[0]:.3f} / {timed[1]:.3f}")
        del inputs, updates, base
        torch.cuda.empty_cache()
    for name, row in cells.items():
        print(f"| {name} | " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()

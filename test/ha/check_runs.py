#!/usr/bin/env python3
"""Reads the run log of the HA test's commands and prints two lines:

    twice N JOBS...        jobs whose command started more than once
    overlaps N SECONDS EXAMPLES...   pairs of commands that held one GPU
                                     of one node at the same time

The log has one line per command start and end, appended by the command
itself:  JOB ALLOC NODE GPUS start|end EPOCH  (GPUS as CUDA_VISIBLE_DEVICES,
e.g. 0,1).  A command without an end still runs (until NOW, argv[2]).
"""
import collections
import sys

path, now = sys.argv[1], float(sys.argv[2])
starts = collections.Counter()
runs = {}
for line in open(path):
    f = line.split()
    if len(f) != 6:
        continue
    job, alloc, node, gpus, what, at = f[0], f[1], f[2], f[3], f[4], float(f[5])
    key = (job, alloc, node)
    if what == "start":
        starts[job] += 1
        runs[key] = [node, gpus, at, None]
    elif key in runs:
        runs[key][3] = at

twice = sorted((j for j, n in starts.items() if n > 1), key=int)
print("twice %d %s" % (len(twice), " ".join(twice[:20])))

by_gpu = collections.defaultdict(list)
for (job, alloc, _), (node, gpus, t0, t1) in runs.items():
    for g in gpus.split(","):
        by_gpu[(node, g)].append((t0, now if t1 is None else t1, job, alloc))
pairs = []
total = 0.0
for (node, g), spans in by_gpu.items():
    spans.sort()
    for i, (a0, a1, aj, aa) in enumerate(spans):
        for b0, b1, bj, ba in spans[i + 1:]:
            if b0 >= a1:
                break
            o = min(a1, b1) - b0
            total += o
            pairs.append("%s/gpu%s:job%s(alloc%s)+job%s(alloc%s)=%.1fs" % (node, g, aj, aa, bj, ba, o))
print("overlaps %d %.1f %s" % (len(pairs), total, " ".join(pairs[:8])))

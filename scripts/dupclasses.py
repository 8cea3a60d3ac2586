#!/usr/bin/env python3
"""Sorts the rows of the duplicates tool's output into four kinds: boilerplate
(the tool marks them), migrations (both sides under migrations/), import-only
(the named run is a Go import list, which the tool does not recognize as
import lines) and other, and prints the count of each; with OUT, the rows of
each kind too. Issue 11's repeated-code bar is read from these counts.

usage, from the repository root:
  duplicates --most 200 --seconds 300 > /tmp/dup.txt
  scripts/dupclasses.py /tmp/dup.txt [OUT]"""
import re, sys
rows = []
for line in open(sys.argv[1]):
    m = re.match(r'^(D\d+) (\S+):(\d+)-(\d+) ~ (\S+):(\d+)-(\d+)(.*)$', line.strip())
    if m: rows.append(m.groups())
imp = re.compile(r'^\s*(import\s*\(|\)|(\w+|_|\.)?\s*"[^"]+"\s*(//.*)?)\s*$')
def lines(f, s, e):
    try: L = open(f, encoding='utf-8', errors='replace').read().split('\n')
    except Exception: return []
    return L[int(s)-1:int(e)]
def importonly(f, s, e):
    ls = [l for l in lines(f, s, e) if l.strip() and not l.strip().startswith('//')]
    return ls and all(imp.match(l) for l in ls)
cats = {'boilerplate': [], 'migrations': [], 'import-only': [], 'other': []}
for r in rows:
    d, fa, sa, ea, fb, sb, eb, rest = r
    if 'boilerplate' in rest: c = 'boilerplate'
    elif fa.startswith('migrations/') and fb.startswith('migrations/'): c = 'migrations'
    elif importonly(fa, sa, ea) or importonly(fb, sb, eb): c = 'import-only'
    else: c = 'other'
    cats[c].append(' '.join([d, f'{fa}:{sa}-{ea}', '~', f'{fb}:{sb}-{eb}', rest]).strip())
out = open(sys.argv[2], 'w') if len(sys.argv) > 2 else None
for c, v in cats.items():
    print(f'{c}: {len(v)}')
    if out:
        out.write(f'## {c}: {len(v)}\n' + '\n'.join(v) + '\n')

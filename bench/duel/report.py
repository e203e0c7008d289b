#!/usr/bin/env python3
"""summary.md and plot.svg of a duel folder (bench/duel.sh), from its duel.txt, sizes.tsv,
results.tsv and *.final-verdict.txt. Standard library only.

    python3 bench/duel/report.py DIR [--linear] [--join OTHER]

--linear draws the token axis linear instead of logarithmic. --join OTHER first brings into DIR
the other side of a duel run in two halves (bench/duel.sh --only): OTHER's samples, results,
final verdicts, result file and log, for the same input, symptom and original signature.
"""
import html
import math
import os
import shutil
import sys

LABEL = {"wsreduce": "wsreduce", "wsreduce-test": "wsreduce --test", "cvise": "C-Vise"}
COLOR = {"wsreduce": "#1f5fa8", "wsreduce-test": "#1f5fa8", "cvise": "#c0392b"}


def read_kv(path):
    kv = {}
    with open(path) as f:
        for line in f:
            k, sep, v = line.rstrip("\n").partition(": ")
            if sep:
                kv[k] = v
    return kv


def read_tsv(path):
    with open(path) as f:
        rows = [line.rstrip("\n").split("\t") for line in f if line.strip()]
    head = rows[0]
    return [dict(zip(head, r)) for r in rows[1:]]


def series(sizes):
    """tool -> [(t_s, lines, tokens)] in time order, in the order the tools first appear."""
    out = {}
    for r in sizes:
        out.setdefault(r["tool"], []).append((float(r["t_s"]), int(r["lines"]), int(r["tokens"])))
    for v in out.values():
        v.sort()
    return out


def at(points, t):
    """The last sample at or before t (the best program so far then)."""
    best = points[0]
    for p in points:
        if p[0] <= t + 1e-9:
            best = p
    return best


def verdict_of(path):
    """The verdict and signature lines of a saved wsoracle output."""
    if not os.path.exists(path):
        return "(not judged)", ""
    v = s = ""
    with open(path) as f:
        for line in f:
            if line.startswith("verdict:") and not v:
                v = " ".join(line.split())
            elif line.startswith("signature:") and not s:
                s = line.rstrip("\n")
    return v or "(no verdict)", s


def nice_step(span, most):
    for s in (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200):
        if span / s <= most:
            return s
    return 10 ** math.ceil(math.log10(span / most))


def plot(dirpath, meta, ser, results, linear):
    # The legend has a row per tool between the titles and the plot, where no curve runs.
    W, H = 860, 500
    L, Rm, Tm, B = 78, 24, 56 + 18 * len(ser), 58
    pw, ph = W - L - Rm, H - Tm - B
    budget = float(meta.get("budget s", "0") or 0)
    tmax = max([p[0] for v in ser.values() for p in v] + [budget, 1.0])
    toks = [p[2] for v in ser.values() for p in v]
    lo, hi = max(1, min(toks)), max(max(toks), 2)
    if linear:
        ystep = nice_step(hi, 8) if hi > 10 else 1
        ylo, yhi = 0.0, math.ceil(hi / ystep) * ystep

        def Y(v):
            return Tm + ph * (1 - (v - ylo) / (yhi - ylo))
        yticks = [ystep * i for i in range(int(yhi / ystep) + 1)]
    else:
        ylo, yhi = 10 ** math.floor(math.log10(lo)), 10 ** math.ceil(math.log10(hi))
        if yhi <= ylo:
            yhi = ylo * 10

        def Y(v):
            v = max(v, ylo)
            return Tm + ph * (1 - (math.log10(v) - math.log10(ylo)) / (math.log10(yhi) - math.log10(ylo)))
        yticks = []
        d = ylo
        while d <= yhi * 1.0001:
            yticks += [m * d for m in (1, 2, 5) if m * d <= yhi * 1.0001]
            d *= 10

    def X(t):
        return L + pw * t / tmax

    xstep = nice_step(tmax, 10)
    e = []
    e.append(f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" '
             'font-family="DejaVu Sans, Arial, sans-serif" font-size="12">')
    e.append(f'<rect width="{W}" height="{H}" fill="white"/>')
    title = f'{meta.get("name", "?")}, --symptom {meta.get("symptom", "?")}, backend {meta.get("backend", "?")}, ' \
            f'-j {meta.get("jobs", "?")}: tokens of the best program so far'
    e.append(f'<text x="{W / 2}" y="22" text-anchor="middle" font-size="14">{html.escape(title)}</text>')
    e.append(f'<text x="{W / 2}" y="40" text-anchor="middle" fill="#555">{html.escape(meta.get("machine", ""))}</text>')
    for v in yticks:
        y = Y(v)
        e.append(f'<line x1="{L}" y1="{y:.1f}" x2="{L + pw}" y2="{y:.1f}" stroke="#e4e4e4"/>')
        e.append(f'<text x="{L - 6}" y="{y + 4:.1f}" text-anchor="end">{int(v)}</text>')
    t = 0
    while t <= tmax + 1e-9:
        x = X(t)
        e.append(f'<line x1="{x:.1f}" y1="{Tm}" x2="{x:.1f}" y2="{Tm + ph}" stroke="#f0f0f0"/>')
        e.append(f'<text x="{x:.1f}" y="{Tm + ph + 18}" text-anchor="middle">{t}</text>')
        t += xstep
    e.append(f'<rect x="{L}" y="{Tm}" width="{pw}" height="{ph}" fill="none" stroke="#444"/>')
    e.append(f'<text x="{L + pw / 2}" y="{H - 16}" text-anchor="middle">seconds since the tool started</text>')
    e.append(f'<text transform="translate(18,{Tm + ph / 2}) rotate(-90)" text-anchor="middle">'
             f'tokens{"" if linear else " (log scale)"}</text>')
    if 0 < budget <= tmax:
        x = X(budget)
        e.append(f'<line x1="{x:.1f}" y1="{Tm}" x2="{x:.1f}" y2="{Tm + ph}" stroke="#888" stroke-dasharray="5,4"/>')
        right = budget > tmax / 2
        e.append(f'<text x="{x + (-4 if right else 4):.1f}" y="{Tm + ph - 8}" fill="#666" '
                 f'text-anchor="{"end" if right else "start"}">budget {int(budget)} s</text>')
    ly = 60
    for tool, pts in ser.items():
        c = COLOR.get(tool, "#333")
        d = f'M{X(pts[0][0]):.1f},{Y(pts[0][2]):.1f}'
        for (t0, _, v0), (t1, _, v1) in zip(pts, pts[1:]):
            d += f' H{X(t1):.1f} V{Y(v1):.1f}'
        e.append(f'<path d="{d}" fill="none" stroke="{c}" stroke-width="2"/>')
        end = pts[-1]
        e.append(f'<circle cx="{X(end[0]):.1f}" cy="{Y(end[2]):.1f}" r="3.5" fill="{c}"/>')
        r = results.get(tool, {})
        kept = {"yes": "bug kept", "no": "bug NOT kept"}.get(r.get("bug_kept", ""), "")
        text = f'{LABEL.get(tool, tool)}: {pts[0][2]} -> {end[2]} tokens, {end[1]} lines, {end[0]:.0f} s' \
               + (f', {kept}' if kept else "")
        lx = L
        e.append(f'<line x1="{lx}" y1="{ly - 4}" x2="{lx + 24}" y2="{ly - 4}" stroke="{c}" stroke-width="2"/>')
        e.append(f'<text x="{lx + 30}" y="{ly}">{html.escape(text)}</text>')
        ly += 18
    e.append("</svg>")
    with open(os.path.join(dirpath, "plot.svg"), "w") as f:
        f.write("\n".join(e) + "\n")


def summary(dirpath, meta, ser, results):
    tools = list(ser.keys())
    ws = next((t for t in tools if t.startswith("wsreduce")), None)
    cv = "cvise" if "cvise" in ser else None
    o = []
    o.append(f'# wsreduce against C-Vise: {meta.get("name", "?")}, --symptom {meta.get("symptom", "?")}')
    o.append("")
    o.append(f'`{meta.get("command", "")}`, {meta.get("date", "")}; {meta.get("machine", "")}'
             f'{"; " + meta["load at the end"] if meta.get("load at the end") else ""} at the end.')
    o.append(f'wsreduce {meta.get("wsreduce", "")}; C-Vise {meta.get("cvise", "")}.')
    o.append("")
    o.append(f'The original: {meta.get("original lines")} non-blank lines, {meta.get("original tokens")} tokens; '
             f'`{" ".join(meta.get("original verdict", "").split())}`, `signature: {meta.get("original signature", "")}`.')
    o.append("")
    same = meta.get("same script") == "1"
    o.append("One judge for both: `test.sh`, wsoracle with the same flags "
             f'(`{meta.get("oracle flags", "") or "none"}`), interesting iff the verdict has the original\'s '
             + ("symptom and detail" if meta.get("symptom") == "compile-error" else "symptom")
             + " and the signature is the original's. "
             + ("wsreduce ran with `--test test.sh`. " if same else
                f'wsreduce ran on its own oracle (`--symptom {meta.get("symptom")}`, the same rule). ')
             + f'wsreduce: `-j {meta.get("jobs")} --budget {meta.get("budget s")}` (the search stops at the budget, '
             f'then the best program is finished); C-Vise: `-n {meta.get("jobs")} --timeout {meta.get("cvise timeout s")}`, '
             f'stopped by SIGINT at {results.get("cvise", {}).get("limit_s", "?")} s (the budget, or wsreduce\'s '
             "whole wall time if longer). One after the other, each from a build cache holding only the "
             "original's judgment.")
    o.append("")
    o.append("| tool | final lines | final tokens | wall s | tests | bug kept | the result's verdict |")
    o.append("| --- | ---: | ---: | ---: | ---: | --- | --- |")
    for t in tools:
        r = results.get(t, {})
        v, s = verdict_of(os.path.join(dirpath, f"{t}.final-verdict.txt"))
        o.append(f'| {LABEL.get(t, t)} | {r.get("lines", "?")} | {r.get("tokens", "?")} | '
                 f'{float(r.get("wall_s", "nan")):.0f} | {r.get("tests", "?")} | {r.get("bug_kept", "?")} | '
                 f'`{v}` {"`" + s + "`" if s else ""} |')
    o.append("")
    o.append("Tests: C-Vise's are runs of test.sh (its checks of the original included); wsreduce's "
             "is the count in its summary line (candidates judged, cache hits and parse-check "
             "refusals included).")
    # C-Vise's Clang passes need clang_delta to parse the file; on CUDA it often cannot, and then
    # only its language-blind passes (lines, tokens, balanced pairs) make progress.
    log = os.path.join(dirpath, "cvise.log")
    if os.path.exists(log):
        with open(log, errors="replace") as f:
            fails = sum(1 for line in f if "clang_delta" in line and "failed" in line)
        if fails:
            o.append("")
            o.append(f"C-Vise's log has {fails} `clang_delta ... failed` lines: its Clang passes could "
                     "not parse this input, so its other passes did the work.")
    for t in tools:
        r = results.get(t, {})
        if r.get("bug_kept") == "no":
            who = LABEL.get(t, t)
            v, s = verdict_of(os.path.join(dirpath, f"{t}.final-verdict.txt"))
            o.append("")
            o.append(f'**{who}\'s result slipped**: judged again it is `{v}` `{s}`, not the original\'s '
                     f'`{" ".join(meta.get("original verdict", "").split())}` '
                     f'`signature: {meta.get("original signature", "")}`.')
    # The sizes at each minute.
    # A row a minute (each half minute in runs of up to 5 minutes), up to the longer run's end.
    tmax = max(p[0] for v in ser.values() for p in v)
    step = 30 if tmax <= 300 else 60
    marks = list(range(step, int(math.ceil(tmax / step)) * step + 1, step))
    o.append("")
    o.append("Sizes over time: the best program so far, non-blank lines / tokens, sampled every 5 s "
             "(`sizes.tsv`); after a tool ended, its result (marked *). Tokens here are identifiers, "
             "numbers and single other characters (bench/cpu/cvise_vs_wsreduce.sh's count, the same "
             "for both tools; wsreduce's log counts its own way).")
    o.append("")
    head = "| t s | " + " | ".join(f"{LABEL.get(t, t)} lines | {LABEL.get(t, t)} tokens" for t in tools)
    o.append(head + (" | fewer tokens |" if ws and cv else " |"))
    o.append("|" + " ---: |" * (1 + 2 * len(tools)) + (" --- |" if ws and cv else ""))
    wins = []
    for m in marks:
        cells = [str(m)]
        tok = {}
        for t in tools:
            p = at(ser[t], m)
            ended = ser[t][-1][0] < m
            cells += [f"{p[1]}{'*' if ended else ''}", f"{p[2]}{'*' if ended else ''}"]
            tok[t] = p[2]
        if ws and cv:
            w = LABEL[ws] if tok[ws] < tok[cv] else "C-Vise" if tok[cv] < tok[ws] else "="
            wins.append(w)
            cells.append(w)
        o.append("| " + " | ".join(cells) + " |")
    # Who was ahead from the first minute on.
    late = [w for m, w in zip(marks, wins) if m >= 60]
    if ws and cv and late:
        o.append("")
        if all(w == LABEL[ws] for w in late):
            o.append(f"From 60 s on, {LABEL[ws]} had fewer tokens than C-Vise at every mark.")
        elif all(w == "C-Vise" for w in late):
            o.append(f"From 60 s on, C-Vise had fewer tokens than {LABEL[ws]} at every mark.")
        else:
            o.append(f"From 60 s on, {LABEL[ws]} had fewer tokens at {sum(w == LABEL[ws] for w in late)} of "
                     f"the {len(late)} marks, C-Vise at {sum(w == 'C-Vise' for w in late)}, equal at "
                     f"{sum(w == '=' for w in late)}.")
    o.append("")
    o.append("Files: `test.sh` (the judge), `original.verdict.txt`, the results "
             + ", ".join(f'`{results[t]["result"]}`' for t in tools if t in results)
             + " and their `*.final-verdict.txt`, `wsreduce.log`, `cvise.log`, `sizes.tsv`, "
             "`results.tsv`, `duel.txt`, `plot.svg`; the tools' folders `wsreduce/` (its report and "
             "trace) and `cvise/` (C-Vise's `.orig`).")
    with open(os.path.join(dirpath, "summary.md"), "w") as f:
        f.write("\n".join(o) + "\n")


def join(d, other):
    """Brings the tools of duel folder `other` into `d`; an error sentence, or None."""
    a, b = read_kv(os.path.join(d, "duel.txt")), read_kv(os.path.join(other, "duel.txt"))
    for k in ("name", "symptom", "original signature"):
        if a.get(k) != b.get(k):
            return f"{other} is a duel of another {k} ({b.get(k)!r}, not {a.get(k)!r})"
    mine = {r["tool"] for r in read_tsv(os.path.join(d, "sizes.tsv"))}
    theirs = [r for r in read_tsv(os.path.join(other, "sizes.tsv")) if r["tool"] not in mine]
    if not theirs:
        return f"{other} has no samples of a tool that {d} lacks"
    tools = {r["tool"] for r in theirs}
    with open(os.path.join(d, "sizes.tsv"), "a") as f:
        for r in theirs:
            f.write("\t".join([r["tool"], r["t_s"], r["lines"], r["tokens"]]) + "\n")
    rt = os.path.join(other, "results.tsv")
    if os.path.exists(rt):
        with open(rt) as f:
            rows = [line for line in f.read().splitlines()[1:] if line.split("\t")[0] in tools]
        with open(os.path.join(d, "results.tsv"), "a") as f:
            for line in rows:
                f.write(line + "\n")
                result = line.split("\t")[-1]
                if os.path.exists(os.path.join(other, result)):
                    shutil.copy(os.path.join(other, result), os.path.join(d, result))
    for t in tools:
        for name in (f"{t}.final-verdict.txt", f"{t}.log"):
            if os.path.exists(os.path.join(other, name)):
                shutil.copy(os.path.join(other, name), os.path.join(d, name))
    with open(os.path.join(d, "duel.txt"), "a") as f:
        f.write(f"joined: {', '.join(sorted(tools))} from {os.path.abspath(other)}\n")
        for k in ("date", "machine", "jobs", "budget s"):
            f.write(f"joined {k}: {b.get(k, '?')}\n")
    return None


def main(argv):
    rest = argv[1:]
    other = None
    if "--join" in rest:
        i = rest.index("--join")
        if i + 1 >= len(rest):
            sys.stderr.write("report.py: --join needs the other half's folder\n")
            return 2
        other = rest[i + 1]
        del rest[i:i + 2]
    args = [a for a in rest if not a.startswith("--")]
    if len(args) != 1 or any(a not in ("--linear",) for a in rest if a.startswith("--")):
        sys.stderr.write("usage: report.py DIR [--linear] [--join OTHER]\n")
        return 2
    d = args[0]
    if other is not None:
        err = join(d, other)
        if err:
            sys.stderr.write(f"report.py: {err}\n")
            return 2
    meta = read_kv(os.path.join(d, "duel.txt"))
    ser = series(read_tsv(os.path.join(d, "sizes.tsv")))
    if not ser:
        sys.stderr.write(f"report.py: {d}/sizes.tsv has no samples\n")
        return 1
    results = {}
    if os.path.exists(os.path.join(d, "results.tsv")):
        results = {r["tool"]: r for r in read_tsv(os.path.join(d, "results.tsv"))}
    plot(d, meta, ser, results, "--linear" in argv)
    summary(d, meta, ser, results)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

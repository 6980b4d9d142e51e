"""The command line: ``python tests/hlo_gen_wide --seed N --count M ...`` (or
``python -m hlo_gen_wide ...`` from ``tests/``); see the package docstring."""
from __future__ import annotations

import os
import sys

if not __package__:                  # the package directory run as a script
    _PKG_DIR = os.path.dirname(os.path.abspath(__file__))
    if sys.path and os.path.abspath(sys.path[0] or ".") == _PKG_DIR:
        del sys.path[0]              # its modules are not top-level modules
    sys.path.insert(0, os.path.dirname(_PKG_DIR))                       # tests/
    sys.path.insert(0, os.path.dirname(os.path.dirname(_PKG_DIR)))      # the repository

import argparse  # noqa: E402
import time  # noqa: E402
import traceback  # noqa: E402

import numpy as np  # noqa: E402

import hlo_gen_wide  # noqa: E402
from hlo_gen_wide.known_issues import KNOWN_ISSUES  # noqa: E402
from hlo_gen_wide.minimizer import minimize  # noqa: E402
from hlo_gen_wide.module import Case, generate  # noqa: E402
from hlo_gen_wide.profiles import PROFILES  # noqa: E402
from hlo_gen_wide.runner import (CLI, SIDES, Mismatch, case_from_file, check_case,  # noqa: E402
                                 save_case)


def _report(args, seed: int, case: Case, bad: list, crashed: bool, dt: float) -> None:
    print(f"seed {seed}: {len(bad)} MISMATCH(ES) ({case.profile}, {dt:.2f} s)")
    for m in bad:
        print("   ", m)
    if not args.quiet:
        print(case.text)
    if args.minimize:
        m = bad[0]
        small = minimize(case, m.side.split(",")[0], m.output, log=print, crash=crashed)
        tag = "crash" if crashed else f"{m.side}_out{m.output}"
        path = os.path.join(args.out, f"seed{seed}_{args.profile}_{tag}")
        save_case(small, path)
        print(f"  minimized to {path}.hlo (inputs: .npz, .pkl):\n{small.text}")
        for i, a in enumerate(small.inputs):
            print(f"  arg{i} = {np.asarray(a)!r}")
    sys.stdout.flush()


def _isolated_sweep(args, argv) -> int:
    """Run the sweep in child processes; a child that dies (an LLVM assertion, a
    segfault) is reported as a crash of the module it was running, and the sweep goes
    on with the next seed in a new child."""
    import subprocess
    child_args = [a for a in (argv if argv is not None else sys.argv[1:]) if a != "--isolate"]
    cur, end, n_bad = args.seed, args.seed + args.count, 0
    while cur < end:
        cmd = [*CLI, *child_args, "--seed", str(cur), "--count", str(end - cur), "--child"]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        running = cur
        for line in proc.stdout:
            if line.startswith("start seed "):
                running = int(line.split()[2])
                continue
            if "MISMATCH" in line:
                n_bad += 1
            print(line, end="", flush=True)
        code = proc.wait()
        if 0 <= code <= 1:
            break
        n_bad += 1
        print(f"seed {running}: CRASH (exit status {code})", flush=True)
        if args.minimize:
            case = generate(running, args.profile)
            _report(args, running, case, [Mismatch(running, args.sides.split(",")[0], -1,
                                                   "process died", case)], True, 0.0)
        cur = running + 1
    return 1 if n_bad else 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=hlo_gen_wide.__doc__.split("\n")[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--count", type=int, default=20)
    ap.add_argument("--profile", default="mixed", choices=["mixed", *PROFILES])
    ap.add_argument("--sides", default=",".join(SIDES))
    ap.add_argument("--minimize", action="store_true", help="shrink each mismatch")
    ap.add_argument("--out", default="/tmp/diffwide", help="where minimized cases go")
    ap.add_argument("--quiet", action="store_true", help="do not print module texts")
    ap.add_argument("--print", action="store_true",
                    help="print every module and its input shapes (not only mismatches)")
    ap.add_argument("--strict", action="store_true",
                    help="no workarounds for the KNOWN_ISSUES (finds them again)")
    ap.add_argument("--isolate", action="store_true",
                    help="run the modules in child processes, so that a crash (an LLVM "
                         "assertion, a segfault) is reported and the sweep goes on")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--run-case", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.strict:
        KNOWN_ISSUES.clear()
    import warnings
    warnings.filterwarnings("ignore", category=RuntimeWarning)
    sides = tuple(s for s in args.sides.split(",") if s)
    if args.run_case:                                  # child of run_isolated
        bad = check_case(case_from_file(args.run_case), sides)
        for m in bad:
            print(m)
        return 1 if bad else 0
    if args.isolate:
        return _isolated_sweep(args, argv)
    n_bad = 0
    t0 = time.time()
    for seed in range(args.seed, args.seed + args.count):
        t = time.time()
        if args.child:
            print(f"start seed {seed}", flush=True)
        try:
            case = generate(seed, args.profile)
        except Exception:  # noqa: BLE001
            print(f"seed {seed}: GENERATOR ERROR MISMATCH\n{traceback.format_exc()}")
            n_bad += 1
            continue
        try:
            bad = check_case(case, sides)
        except Exception:  # noqa: BLE001
            print(f"seed {seed}: ORACLE ERROR MISMATCH\n{traceback.format_exc()}\n{case.text}")
            n_bad += 1
            continue
        dt = time.time() - t
        if args.print:
            print(case.text)
            print("inputs:", ", ".join(f"{np.asarray(a).dtype}{list(np.shape(a))}"
                                       if not isinstance(a, tuple) else "tuple"
                                       for a in case.inputs))
            print("outputs:", ", ".join(f"{o.ty}{'' if o.err == 0 else f'~{o.err:.2g}'}"
                                        for o in case.outputs))
        if not bad:
            print(f"seed {seed}: ok ({case.profile}, {dt:.2f} s)", flush=True)
            continue
        n_bad += 1
        _report(args, seed, case, bad, False, dt)
    if not args.child:
        print(f"{args.count} modules, {n_bad} with mismatches, {time.time() - t0:.1f} s")
    return 1 if n_bad else 0


if __name__ == "__main__":
    sys.exit(main())

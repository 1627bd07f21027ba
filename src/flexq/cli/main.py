"""Entry point of the ``flexq`` command: sub-commands up, down, env, demo, tutorial, convert, status, dashboard,
submit, logs, fallback, eta, simulate, completion.

Owns: the parser and dispatch only; each command's parser and work live in its own module (``lifecycle`` for
up/down/env, ``demo``, ``tutorial_files`` for ``flexq tutorial``, ``convert``, ``status``/``observe``/``kubeclient`` for
status and logs, ``submit``, ``eta``, ``completion``). The parser (``Parser``) gives every sub-command a description
with examples, shows each option's default in its help, reads a value such as ``-1h`` as a value (refused
by the option's own check) rather than as an unknown option, and says a usage error in one line
(``error: --timeout: invalid duration '6 hours': ...``), as ``flexq simulate`` says a bad study file.
Heavy modules are imported inside the command that needs them so ``flexq --help`` and ``flexq env`` stay
fast. Must not import flexq.http at module level.
"""

from __future__ import annotations

import argparse
import re
import sys
from typing import Any, NoReturn

from flexq import __version__
from flexq.cli.args import duration, examples, kube_flags
from flexq.cli.views import console, err_console


# -- parsing ----------------------------------------------------------------------------------------------------
class HelpFormatter(argparse.HelpFormatter):
    """Descriptions wrapped to the terminal, except paragraphs laid out by hand (indented lines, numbered
    items, examples), which stay as written; each option's default after its help (when it has one worth
    saying: not None, False or an empty list)."""

    def _split_lines(self, text: str, width: int) -> list[str]:
        import textwrap

        # never split a value such as user-queue or tpu-v6e-slice at its hyphens
        return textwrap.wrap(" ".join(text.split()), width, break_on_hyphens=False)

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        import textwrap

        out = []
        for para in text.split("\n\n"):
            lines = para.splitlines()
            if (
                any(ln.startswith(" ") for ln in lines)
                or para.startswith("examples:")
                or para[:2] in ("1.", "2.")
            ):
                out.append("\n".join(indent + ln for ln in lines))
            else:
                out.append(
                    textwrap.fill(
                        " ".join(lines),
                        width,
                        initial_indent=indent,
                        subsequent_indent=indent,
                        break_on_hyphens=False,
                    )
                )
        return "\n\n".join(out)

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if "default" in text or not action.option_strings or action.help == argparse.SUPPRESS:
            return text
        d = action.default
        if d is None or d is False or d == [] or d == argparse.SUPPRESS or isinstance(action.const, bool):
            return text  # a flag (store_true) or no default worth saying; a 0 is one (--keep-idle 0)
        value = "%(default)s"
        if getattr(action.type, "__name__", "") == "duration" and isinstance(d, int | float):
            value = f"{d:g} s" if d < 120 or d % 60 else f"{d / 60:g} min ({d:g} s)"
        return f"{text} (default: {value})" if text else f"(default: {value})"


class Parser(argparse.ArgumentParser):
    """``argparse`` with flexq's conventions (see the module docstring)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)
        # A word starting with "-" and a digit is a value (a negative duration, refused by the option's own check),
        # never an option: no flexq option is spelled that way. argparse's own rule takes only plain numbers.
        self._negative_number_matcher = re.compile(r"^-\d")

    def parse_args(self, args: Any = None, namespace: Any = None) -> Any:
        """argparse's, with a misspelled option answered by the options of the command it was given to
        (``flexq status --namepsace x``: did you mean --namespace?)."""
        ns, extras = self.parse_known_args(args, namespace)
        if not extras:
            return ns
        import difflib

        chain: list[argparse.ArgumentParser] = [self]
        while True:  # the sub-commands chosen, deepest last
            sub = next((a for a in chain[-1]._actions if isinstance(a, argparse._SubParsersAction)), None)
            picked = (
                getattr(ns, sub.dest, None) if sub is not None and sub.dest != argparse.SUPPRESS else None
            )
            if sub is None or picked not in sub.choices:
                break
            chain.append(sub.choices[picked])
        options = sorted(
            {o for p in chain for a in p._actions for o in a.option_strings if o.startswith("--")}
        )
        message = f"unrecognized arguments: {' '.join(extras)}"
        for word in extras:
            if word.startswith("--"):
                close = difflib.get_close_matches(word.partition("=")[0], options, n=1, cutoff=0.6)
                if close:
                    message += f"; did you mean {close[0]}?"
        chain[-1].error(message)

    def error(self, message: str) -> NoReturn:
        message = re.sub(r"^argument ([^:]+): ", r"\1: ", message)
        m = re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)", message)
        if m is not None:  # flexq stauts: did you mean status?
            import difflib

            choices = re.findall(r"'([^']*)'", m.group(2)) or [c.strip() for c in m.group(2).split(",")]
            close = difflib.get_close_matches(m.group(1), choices, n=1, cutoff=0.6)
            if close:
                message += f"; did you mean {close[0]!r}?"
        self.exit(2, f"error: {message} (see: {self.prog} --help)\n")


# -- commands ---------------------------------------------------------------------------------------------------
def _cmd_tutorial(args: argparse.Namespace) -> int:
    from flexq.cli import tutorial_files

    return tutorial_files.run(args, console, err_console)


def _cmd_convert(args: argparse.Namespace) -> int:
    from flexq.cli import convert

    return convert.run(args, console, err_console)


def _cmd_fallback(args: argparse.Namespace) -> int:
    from flexq.cli import fallback

    if args.fallback_command == "manifests":
        return fallback.cmd_manifests(args, err_console)
    return fallback.run(args, console, err_console)


def _cmd_simulate(args: argparse.Namespace) -> int:
    from flexq.cli import simulate
    from flexq.errors import missing_of, require_extra

    if args.ray_address:
        require_extra("ray", "flexq simulate --ray-address")
    if not args.no_plots and missing_of("plots"):
        err_console.print(
            "note: matplotlib is not installed, so no plots and no report.html (pip install 'flexq[plots]'); "
            "jobs.csv and the JSON summaries are written",
            markup=False,
            highlight=False,
        )
        args.no_plots = True
    return simulate.run(args, console, err_console)


def _cmd_eta(args: argparse.Namespace) -> int:
    from flexq.cli import eta

    return eta.run(args, console, err_console)


def _cmd_completion(args: argparse.Namespace) -> int:
    from flexq.cli import completion

    sys.stdout.write(completion.script(build_parser(), args.shell))
    return 0


def version_lines() -> list[str]:
    """``flexq version``: flexq's own version, then what it runs and models: the Kueue releases a twin can run
    (the default first), the Kubernetes version a twin's clusters report, Ray when installed, Python."""
    import platform

    from flexq.api.kueue_versions import DEFAULT, KNOWN
    from flexq.errors import missing_of

    kueue = [DEFAULT.version, *(v for v in KNOWN if v != DEFAULT.version)]
    ray = "not installed (pip install 'flexq[ray]')"
    if not missing_of("ray"):
        from importlib.metadata import version as dist_version

        ray = dist_version("ray")
    return [
        f"flexq {__version__}",
        f"Kueue (a twin runs one): {kueue[0]} (default), {', '.join(kueue[1:])}",
        "Kubernetes: 1.34, GKE's version in the tutorial (docs/upstream-versions.md: what each part follows)",
        f"Ray (real training): {ray}",
        f"Python: {platform.python_version()}",
    ]


def _cmd_version(args: argparse.Namespace) -> int:
    if args.short:
        sys.stdout.write(f"flexq {__version__}\n")
    else:
        sys.stdout.write("\n".join(version_lines()) + "\n")
    return 0


# -- parser -----------------------------------------------------------------------------------------------------
COMMANDS: dict[str, tuple[str, ...]] = {  # each part of the parser, by the commands it adds
    "lifecycle": ("up", "down", "env"),
    "demo": ("demo",),
    "tutorial": ("tutorial",),
    "convert": ("convert",),
    "status": ("status", "dashboard"),
    "submit": ("submit",),
    "logs": ("logs",),
    "fallback": ("fallback",),
    "eta": ("eta",),
    "simulate": ("simulate",),
    "version": ("version",),
    "completion": ("completion",),
}


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """flexq's parser. With ``command`` (the one ``argv`` names), only that command's part is built in full;
    every other command is a name without options (what parsing it does not need), so a command loads only its
    own modules: ``flexq status`` does not load the fallback, the simulator's reports or Kueue's conversion
    (a quarter of its start-up, issue 49). ``flexq --help``, completion and an unknown command build it all."""
    whole = command is None or not any(command in names for names in COMMANDS.values())

    def part(name: str) -> bool:
        if whole or command in COMMANDS[name]:
            return True
        for other in COMMANDS[name]:
            sub.add_parser(other)
        return False

    p = Parser(
        prog="flexq",
        description="A local twin of GKE + Kueue + KubeRay for on-demand-first TPU training with DWS "
        "flex-start as the fallback, a capacity simulator and a stock-out fallback.",
        epilog=examples(
            "flexq demo                      # the tutorial end to end in this process (real Ray)",
            "flexq tutorial init tutorial    # the tutorial's files, for the live tutorial",
            'flexq up && eval "$(flexq env)"  # the twin in the background, gcloud and kubectl pointed at it',
            "flexq simulate examples/tutorial-week --until 12h",
            "flexq <command> --help          # each command's options and examples",
        ),
    )
    p.add_argument("-V", "--version", action="version", version=f"flexq {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    if part("lifecycle"):
        from flexq.cli import lifecycle

        lifecycle.add_parsers(sub)
    if part("demo"):
        from flexq.cli import demo

        demo.add_parser(sub)
    if part("tutorial"):
        from flexq.cli.tutorial_files import add_parser as add_tutorial

        add_tutorial(sub, examples).set_defaults(func=_cmd_tutorial)
    if part("convert"):
        from flexq.cli.convert import add_parser as add_convert

        add_convert(sub, examples).set_defaults(func=_cmd_convert)
    if part("status"):
        from flexq.cli import observe

        observe.add_status_parsers(sub)
    if part("submit"):
        from flexq.cli import submit

        submit.add_parser(sub)
    if part("logs"):
        from flexq.cli import observe

        observe.add_logs_parser(sub)
    if part("fallback"):
        from flexq.cli.fallback import add_parser as add_fallback

        add_fallback(sub, kube_flags, duration, examples).set_defaults(func=_cmd_fallback)
    if part("eta"):
        from flexq.cli.eta import add_parser as add_eta

        add_eta(sub, kube_flags, duration, examples).set_defaults(func=_cmd_eta)
    if part("simulate"):
        from flexq.cli.simulate import add_parser as add_simulate

        sm = add_simulate(sub)
        sm.description = (
            "Capacity planning on the virtual clock: a study's manifests, traffic and capacity profile run "
            "through the twin's own controllers, several variants on the same traffic, each replica a seed; "
            "then the jobs that never ran, waits, quota usage, evictions, node-hours and cost per variant "
            "(jobs.csv, JSON, plots), what cost the most, and each change it suggests run on the same seeds "
            "before it is shown. Mistakes of configuration (a ConfigMap no manifest provides, a ${VAR} left "
            "over, a queue that does not exist, ...) are refused before anything runs.\n\n"
            "The study format (simulation.yaml, the trace's columns and units, the generator, the placeholders, "
            "the sweep file), with a study to copy: docs/simulate.md."
        )
        sm.epilog = examples(
            "flexq simulate examples/tutorial-week --until 12h",
            "flexq simulate examples/tutorial-week --sweep examples/tutorial-week/sweep.yaml",
            "flexq simulate examples/kueue-baseline/generator.yaml --scale 0.1",
            "flexq simulate STUDY --replicas 8 -j 2 --out results",
            "flexq simulate STUDY --no-plots       # without the plots extra",
        )
        sm.set_defaults(func=_cmd_simulate)

    if part("version"):
        vp = sub.add_parser(
            "version",
            help="print flexq's version, and the Kueue, Kubernetes and Ray versions it models and runs",
            description="Print flexq's version (as -V does), then the Kueue releases a twin can run (the "
            "default first), the Kubernetes version its clusters report, the Ray it trains with, and Python.",
            epilog=examples("flexq version", "flexq version --short             # as flexq -V"),
        )
        vp.add_argument("--short", action="store_true", help="flexq's version only")
        vp.set_defaults(func=_cmd_version)

    if not part("completion"):
        return p
    c = sub.add_parser(
        "completion",
        help="print a shell completion script",
        description="Print a completion script for flexq's commands and options.",
        epilog=examples(
            'eval "$(flexq completion bash)"              # in ~/.bashrc',
            'eval "$(flexq completion zsh)"               # in ~/.zshrc',
            "flexq completion fish > ~/.config/fish/completions/flexq.fish",
        ),
    )
    c.add_argument("shell", choices=["bash", "zsh", "fish"], help="the shell")
    c.set_defaults(func=_cmd_completion)
    return p


def main(argv: list[str] | None = None) -> int:
    from flexq.cli.views import fit_width
    from flexq.errors import MissingExtra

    fit_width()
    words = sys.argv[1:] if argv is None else argv
    args = build_parser(words[0] if words and not words[0].startswith("-") else None).parse_args(argv)
    try:
        return int(args.func(args))
    except MissingExtra as exc:
        err_console.print("[red]error:[/] ", end="")
        err_console.print(str(exc), markup=False, highlight=False, soft_wrap=True)
        return 1
    except BrokenPipeError:  # `flexq status -o json | head`
        sys.stderr.close()
        return 0
    except KeyboardInterrupt:  # Ctrl-C: no traceback, the shell's status for SIGINT
        return 130


if __name__ == "__main__":
    sys.exit(main())

"""``flexq completion bash|zsh|fish``: a completion script made from the parser itself.

Owns: ``words(parser)`` (per command path — ``""``, ``"simulate"``, ``"fallback manifests"`` — its
sub-commands and options, and the options that take a value and their choices) and ``script(parser, shell)``.
bash and zsh (through ``bashcompinit``) share one function: it walks the words typed so far down the command
tree, then offers the sub-commands or options of where it stands, an option's choices after it, and file
names otherwise. Nothing is run at completion time but the shell itself.
"""

from __future__ import annotations

import argparse
import shlex
from typing import Any

__all__ = ["words", "script"]


def words(parser: argparse.ArgumentParser) -> dict[str, dict[str, Any]]:
    """``{path: {"commands": [...], "options": [...], "takes": {option: [choices]}}}``."""
    out: dict[str, dict[str, Any]] = {}

    def walk(p: argparse.ArgumentParser, path: str) -> None:
        entry: dict[str, Any] = {"commands": [], "options": [], "takes": {}}
        out[path] = entry
        for action in p._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, child in action.choices.items():
                    entry["commands"].append(name)
                    walk(child, f"{path} {name}".strip())
            elif action.option_strings:
                entry["options"] += action.option_strings
                if action.nargs != 0:
                    for opt in action.option_strings:
                        entry["takes"][opt] = [str(c) for c in action.choices or []]
            elif action.choices:
                entry["commands"] += [str(c) for c in action.choices]

    walk(parser, "")
    return out


def _bash(tree: dict[str, dict[str, Any]]) -> str:
    cases_cmd, cases_opt, cases_takes = [], [], []
    for path, e in tree.items():
        key = shlex.quote(path)
        cases_cmd.append(f"        {key}) echo {shlex.quote(' '.join(e['commands']))} ;;")
        cases_opt.append(f"        {key}) echo {shlex.quote(' '.join(e['options']))} ;;")
        for opt, choices in e["takes"].items():
            cases_takes.append(
                f"        {shlex.quote(path + '|' + opt)}) echo {shlex.quote(' '.join(choices) or '-')} ;;"
            )
    nl = "\n"
    return f"""# flexq completion (bash; zsh through bashcompinit): eval "$(flexq completion bash)"
_flexq_commands() {{
    case "$1" in
{nl.join(cases_cmd)}
    esac
}}
_flexq_options() {{
    case "$1" in
{nl.join(cases_opt)}
    esac
}}
_flexq_takes() {{
    case "$1" in
{nl.join(cases_takes)}
        *) return 1 ;;
    esac
}}
_flexq() {{
    local cur prev path="" word i subs
    cur="${{COMP_WORDS[COMP_CWORD]}}"
    prev="${{COMP_WORDS[COMP_CWORD-1]}}"
    for ((i = 1; i < COMP_CWORD; i++)); do
        word="${{COMP_WORDS[i]}}"
        subs=" $(_flexq_commands "$path") "
        if [[ "$word" != -* && "$subs" == *" $word "* ]]; then
            path="${{path:+$path }}$word"
        fi
    done
    local takes
    if takes="$(_flexq_takes "$path|$prev")"; then
        if [[ "$takes" == "-" ]]; then
            COMPREPLY=($(compgen -f -- "$cur"))
        else
            COMPREPLY=($(compgen -W "$takes" -- "$cur"))
        fi
        return 0
    fi
    if [[ "$cur" == -* ]]; then
        COMPREPLY=($(compgen -W "$(_flexq_options "$path")" -- "$cur"))
    else
        COMPREPLY=($(compgen -W "$(_flexq_commands "$path")" -- "$cur") $(compgen -f -- "$cur"))
    fi
    return 0
}}
complete -o filenames -F _flexq flexq
"""


def _fish(tree: dict[str, dict[str, Any]]) -> str:
    lines = ["# flexq completion (fish): flexq completion fish > ~/.config/fish/completions/flexq.fish"]
    for path, e in tree.items():
        parts = path.split()
        cond = "; and ".join(f"__fish_seen_subcommand_from {p}" for p in parts) or "__fish_use_subcommand"
        for name in e["commands"]:
            lines.append(f"complete -c flexq -f -n {shlex.quote(cond)} -a {shlex.quote(name)}")
        for opt in e["options"]:
            flag = f"-l {opt[2:]}" if opt.startswith("--") else f"-s {opt[1:]}"
            choices = e["takes"].get(opt)
            extra = (
                " -r" if choices == [] else (f" -x -a {shlex.quote(' '.join(choices))}" if choices else "")
            )
            lines.append(f"complete -c flexq -n {shlex.quote(cond)} {flag}{extra}")
    return "\n".join(lines) + "\n"


def script(parser: argparse.ArgumentParser, shell: str) -> str:
    tree = words(parser)
    if shell == "fish":
        return _fish(tree)
    text = _bash(tree)
    if shell == "zsh":
        text = "autoload -U +X bashcompinit && bashcompinit\n" + text
    return text

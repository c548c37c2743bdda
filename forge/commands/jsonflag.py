"""`--json [FILE]`, the one JSON flag every `forge` command takes.

`--json` alone, or `--json -`, prints the command's JSON report on standard
output (the summary in words then goes to standard error, or nowhere where
the JSON says it all); `--json FILE` or `--json=FILE` writes the report to
FILE and the command prints its summary in words as it does without the flag.

`json_option(what)` is the flag; `emit_json(target, text)` writes the
report where it goes; `JsonCommand` and `JsonGroup` are the command classes
that read a word after a bare `--json` the way the command needs it
(`spell_json`): the flag was a switch on `run`, `explore`, `replay`, `spec`
and `lifecycle check`, so `forge run --json P.md` still means "print JSON,
run P.md".  The rule: the word after a bare `--json` is its FILE unless the
command then lacks a required argument, the word names a subcommand, or the
command takes files of its own beyond one (`replay`, `explore merge`) and
the word names an existing file.  `--json=FILE` always names the FILE.

What does not live here: the reports themselves (each command's), output
path checks and writing (`forge.commands.params`).
"""

from __future__ import annotations

import click

from forge.commands.params import STDOUT, OutputPath, write_output
from forge.errors import InputError


def json_option(what: str):
    """The `--json [FILE]` flag, its value under `json_out`: None (not
    given), `-` (standard output) or a file; `what` names the report."""
    return click.option("--json", "json_out", type=OutputPath(), default=None, is_flag=False,
                        flag_value=STDOUT, metavar="[FILE]",
                        help=f"{what} as JSON: alone or -, on standard output; "
                             "with FILE, written there.")


def on_stdout(json_out: str | None) -> bool:
    """Whether the JSON report takes standard output (so words go elsewhere)."""
    return json_out == STDOUT


def emit_json(json_out: str | None, text: str) -> None:
    """Write the JSON report `text` where `--json` said (nothing when not given).

    Raises:
        InputError: naming `--json` and the file, when the system refuses.
    """
    if json_out is None:
        return
    try:
        write_output(json_out, text)
    except InputError as e:
        raise InputError(e.render(), file="--json") from None


def spell_json(command: click.Command, ctx: click.Context, args: list[str]) -> list[str]:
    """`args` with each bare `--json WORD` spelled `--json=WORD` (WORD is the
    FILE) or `--json=-` (WORD is left for the command), by the module's rule."""
    args = list(args)
    i = 0
    while i < len(args) - 1:
        if args[i] == "--":
            break
        word = args[i + 1]
        if args[i] != "--json" or word.startswith("-"):
            i += 1
            continue
        as_file = args[:i] + [f"--json={word}"] + args[i + 2:]
        as_word = args[:i] + ["--json=-"] + args[i + 1:]
        args = as_word if _is_argument(command, ctx, word, as_file, as_word) else as_file
        i += 1
    return args


def _is_argument(command, ctx, word: str, as_file: list[str], as_word: list[str]) -> bool:
    import os

    if isinstance(command, click.Group):
        return word in command.commands
    positional = [p for p in command.params if isinstance(p, click.Argument)]
    if not positional:
        return False
    parsed_file, parsed_word = _parse(command, ctx, as_file), _parse(command, ctx, as_word)
    if parsed_file is None or parsed_word is None:
        return parsed_file is None and parsed_word is not None
    opts, extra = parsed_file
    if any(p.required and not _given(opts.get(p.name)) for p in positional):
        return True
    if parsed_word[1]:
        return False    # the command has no room for the word: it is the FILE
    variadic = any(p.nargs == -1 for p in positional)
    return variadic and os.path.isfile(word)


def _parse(command, ctx, args):
    """(values, extra words) as `command`'s parser reads `args`, or None when
    it refuses them (the real parse then says why)."""
    try:
        opts, extra, _ = command.make_parser(ctx).parse_args(args=list(args))
    except click.UsageError:
        return None
    return opts, extra


def _given(value) -> bool:
    return isinstance(value, str) or (isinstance(value, tuple) and bool(value))


class JsonCommand(click.Command):
    """A command whose `--json [FILE]` reads the word after it by `spell_json`."""

    def parse_args(self, ctx, args):
        return super().parse_args(ctx, spell_json(self, ctx, args))


class JsonGroup(click.Group):
    """A group whose own `--json [FILE]` does not take a subcommand's name."""

    command_class = JsonCommand

    def parse_args(self, ctx, args):
        return super().parse_args(ctx, spell_json(self, ctx, args))

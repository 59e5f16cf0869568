"""A packetdrill script into typed events (:mod:`.ast`), as packetdrill's ``parser.y`` reads
the subset the kernel's selftests use. A syntax error is a :class:`ScriptSyntaxError` naming
line and column; a construct the model cannot run (``%{ python }%``, TFO, AccECN, MPTCP,
cmsg/error queue, TCP-AO/MD5, IPv6 addressing, UDP/ICMP, unknown options and syscalls) becomes
an :class:`Unsupported` event naming it, never an exception."""

from __future__ import annotations

import re
from typing import Literal

from app.sim.core.i18n import Message, msg
from app.sim.tcp.options import TcpOption
from app.sim.tcp.packetdrill.ast import (
    Arg,
    Comment,
    Elided,
    Event,
    EventTime,
    InfoAssert,
    InfoCheck,
    ListArg,
    Name,
    Option,
    Packet,
    Script,
    Shell,
    Str,
    StructArg,
    Syscall,
    TimeKind,
    Unsupported,
)
from app.sim.tcp.packetdrill.lexer import ScriptSyntaxError, Token, tokenize
from app.sim.tcp.packetdrill.tcpinfo import CA_STATES, OFFSETS

SYSCALLS = frozenset(
    (
        *("socket", "bind", "listen", "accept", "connect", "write", "send", "sendto"),
        *("read", "recv", "recvfrom", "close", "shutdown", "setsockopt", "getsockopt"),
        *("fcntl", "poll", "ioctl"),
    )
)
IOCTLS = frozenset({"SIOCINQ", "FIONREAD"})  # the receive queue's bytes (tcp_ioctl)
# Names whose presence anywhere in a syscall makes it out of scope, by the construct they use
UNSUPPORTED_NAMES: tuple[tuple[str, str], ...] = (
    (r"^(TCP_FASTOPEN\w*|MSG_FASTOPEN)$", "TCP Fast Open (TFO)"),
    (r"^(TCP_MD5SIG\w*|TCP_AO\w*)$", "TCP-AO/MD5 signatures"),
    (r"^(IPPROTO_MPTCP|MPTCP\w*|SOL_MPTCP)$", "MPTCP"),
    (
        r"^(MSG_ERRQUEUE|SO_TIMESTAMPING\w*|SO_ZEROCOPY|MSG_ZEROCOPY|SCM_\w+|IP_RECVERR)$",
        "cmsg / error queue",
    ),
    (r"^(AF_INET6|IPV6_\w+|SOL_IPV6|IPPROTO_IPV6)$", "IPv6 addressing"),
    (r"^TCP_ECN\w*$", "AccECN / ECN"),
)
UNSUPPORTED_SYSCALLS: dict[str, str] = {
    "sendmsg": "cmsg / error queue (sendmsg)",
    "recvmsg": "cmsg / error queue (recvmsg)",
}
UNSUPPORTED_OPTIONS: tuple[tuple[str, str], ...] = (
    (r"^(FO|FOEXP|exp-tfo|tfo)$", "TCP Fast Open (TFO)"),
    (r"^md5$", "TCP-AO/MD5 signatures"),
    (r"^(mp\w*|dss|add_address|remove_address|mpcapable|mp_capable|mp_join)$", "MPTCP"),
    (r"^(AccECN\w*|accecn\w*|AccECN0|AccECN1)$", "AccECN / ECN"),
)
_FLAG_LETTERS = frozenset("SFRP.")
# packetdrill's parser.y: is_valid_u32 / u16 / u8 for a packet's numbers
U32, U16, U8 = 2**32 - 1, 2**16 - 1, 2**8 - 1
# the selftests' common/set_sysctls.py writes /proc/sys/net/ipv4/X=V and leaves a script
# /tmp/sysctl_restore_${PPID}.sh that undoes it; settings apply to the whole run, so the
# restore line (at a script's end) has nothing left to undo
_PROC_SYSCTL = re.compile(r"^/proc/sys/net/ipv4/(\w+)=(\S+)$")
_RESTORE = re.compile(r"^/tmp/sysctl_restore_\$\{PPID\}\.sh$")
# one line of a %{ }% block the runner checks: assert tcpi_X OP N[, message][# comment], the
# field one of app.sim.tcp.packetdrill.tcpinfo's, N a number or a TCP_CA_* name
_INFO_ASSERT = re.compile(
    r"^assert\s+(tcpi_\w+)\s*(==|!=|<=|>=|<|>)\s*(\d+|TCP_CA_\w+)\s*(?:[,#][^\n]*)?$"
)
_SYSCTL = re.compile(r"^(net\.ipv4\.\w+)=(.*)$")
_ARITH = re.compile(r"\$\(\(([0-9+\-* ]+)\)\)")


def info_checks(block: str) -> tuple[InfoCheck, ...]:
    """The assertions of a ``%{ … }%`` block, one per line; empty when any line is something
    else (then the block is unsupported)."""
    checks: list[InfoCheck] = []
    for raw in block[2:-2].splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        m = _INFO_ASSERT.match(line)
        if m is None or m[1] not in OFFSETS:
            return ()
        value = CA_STATES.get(m[3]) if m[3].startswith("TCP_CA_") else int(m[3])
        if value is None:
            return ()
        checks.append(InfoCheck(field=m[1], op=m[2], value=value))
    return tuple(checks)


def parse(text: str) -> Script:
    """``text`` as a :class:`Script`; raises :class:`ScriptSyntaxError` at the first error."""
    return _Parser(tokenize(text), text).script()


class _Parser:
    def __init__(self, toks: list[Token], text: str) -> None:
        self.toks = toks
        self.i = 0
        self.text = text
        self.lines = tuple(text.split("\n"))
        self.last_line = 0  # the line of the last token that started an event

    # --- token helpers ---------------------------------------------------------------------
    def peek(self, k: int = 0) -> Token | None:
        j = self.i + k
        return self.toks[j] if j < len(self.toks) else None

    def take(self) -> Token:
        tok = self.peek()
        if tok is None:
            last = self.toks[-1] if self.toks else None
            line = last.line if last else 1
            col = last.col + len(last.text) if last else 1
            raise ScriptSyntaxError(line, col, msg("the script ends in the middle of an event"))
        self.i += 1
        return tok

    def skip_comments(self) -> None:
        while (t := self.peek()) is not None and t.kind == "comment":
            self.i += 1

    def at_end_of_event(self) -> bool:
        self.skip_comments()
        t = self.peek()
        return t is None or t.kind == "nl"

    def expect(self, kind: str, text: str | None, what: Message) -> Token:
        self.skip_comments()
        tok = self.take()
        if tok.kind != kind or (text is not None and tok.text != text):
            raise self.error(tok, what)
        return tok

    def error(self, tok: Token, what: Message) -> ScriptSyntaxError:
        shown = "end of line" if tok.kind == "nl" else tok.text[:20]
        return ScriptSyntaxError(
            tok.line, tok.col, msg("expected {what}, found {found}", what=what, found=shown)
        )

    def skip_event(self) -> None:
        while (t := self.peek()) is not None and t.kind != "nl":
            self.i += 1

    def number(self, what: Message, field: str | None = None, hi: int = U32) -> int:
        """An integer; with ``field``, one within 0..hi, as packetdrill's parser.y checks a
        packet's numbers (is_valid_u32/u16/u8: \"TCP window value out of range\", …)."""
        self.skip_comments()
        tok = self.take()
        neg = False
        if tok.kind == "punct" and tok.text == "-":
            neg = True
            tok = self.take()
        if tok.kind != "num" or "." in tok.text:
            raise self.error(tok, what)
        v = int(tok.text, 16) if tok.text[:2].lower() == "0x" else int(tok.text)
        v = -v if neg else v
        if field is not None and not 0 <= v <= hi:
            raise ScriptSyntaxError(
                tok.line,
                tok.col,
                msg("{field} {v} out of range (0 to {hi})", field=field, v=v, hi=hi),
            )
        return v

    # --- script ------------------------------------------------------------------------------
    def script(self) -> Script:
        events: list[Event] = []
        while (tok := self.peek()) is not None:
            if tok.kind == "nl":
                self.i += 1
                continue
            ev = self.statement(tok)
            if ev is not None:
                events.append(ev)
        return Script(events=tuple(events), lines=self.lines)

    def statement(self, tok: Token) -> Event | None:
        pos = {"line": tok.line, "col": tok.col}
        if tok.kind == "comment":
            self.i += 1
            first = tok.line != self.last_line
            self.last_line = tok.line
            return Comment(**pos, text=tok.text) if first else None
        self.last_line = tok.line
        if tok.kind == "python":
            self.i += 1
            return Unsupported(
                line=tok.line, col=tok.col, construct="%{ python }% block", text=tok.text[:60]
            )
        if tok.kind == "option":
            self.i += 1
            name, _, value = tok.text[2:].partition("=")
            return Option(**pos, name=name, value=value.strip())
        if tok.kind == "shell":
            self.i += 1
            return shell(tok)
        time = self.event_time()
        self.skip_comments()
        head = self.peek()
        if head is None:
            raise ScriptSyntaxError(tok.line, tok.col, msg("a time with no event after it"))
        if head.kind == "python":  # +0 %{ assert tcpi_… }%
            self.i += 1
            checks = info_checks(head.text)
            if checks:
                return InfoAssert(**pos, time=time, checks=checks)
            return Unsupported(
                **pos, construct="%{ python }% block", text=head.text[:60], time=time
            )
        if head.kind == "shell":  # +.07 `sysctl …`: settings apply only from the start here
            self.i += 1
            words = head.text[1:-1].split()
            what = f"timed shell command {words[0] if words else ''}".rstrip()
            return Unsupported(**pos, construct=what, text=head.text[:60], time=time)
        if head.kind == "punct" and head.text in "<>":
            return self.packet(pos["line"], pos["col"], time)
        if head.kind == "word" and (nxt := self.peek(1)) is not None and nxt.text == "(":
            return self.syscall(pos["line"], pos["col"], time)
        raise self.error(head, msg("a packet (< or >) or a system call"))

    def event_time(self) -> EventTime:
        kind, us = self.one_time()
        end: int | None = None
        self.skip_comments()
        t = self.peek()
        if t is not None and (t.kind == "ellipsis" or t.text == "~"):  # a...b, a~b
            self.i += 1
            end_kind, end = self.one_time()
            if kind == "any" or end_kind == "any":
                raise self.error(t, msg("a time range with two numbers"))
            if end < us and kind == "abs":
                raise ScriptSyntaxError(
                    t.line, t.col, msg("a time range that ends before it starts")
                )
        return EventTime(kind=kind, us=us, end_us=end)

    def one_time(self) -> tuple[TimeKind, int]:
        self.skip_comments()
        tok = self.take()
        if tok.kind == "punct" and tok.text == "*":
            return "any", 0
        kind: TimeKind = "abs"
        if tok.kind == "punct" and tok.text == "+":
            kind = "rel"
            tok = self.take()
        if tok.kind != "num" or tok.text[:2].lower() == "0x":
            raise self.error(tok, msg("a time (0.100, +0.1 or *)"))
        return kind, round(float(tok.text) * 1_000_000)

    # --- packets -----------------------------------------------------------------------------
    def packet(self, line: int, col: int, time: EventTime) -> Event:
        d = self.take()
        direction: Literal["<", ">"] = "<" if d.text == "<" else ">"
        self.skip_comments()
        first = self.peek()
        if first is None or first.kind == "nl":
            raise ScriptSyntaxError(d.line, d.col, msg("a packet needs flags (S, ., P., F., R)"))
        if first.kind == "word" and first.text.lower() in ("udp", "icmp", "sctp", "gre", "mpls"):
            self.skip_event()
            return Unsupported(line=line, col=col, construct=f"{first.text.lower()} packets")
        if first.kind == "punct" and first.text == "[":
            self.skip_event()
            return Unsupported(line=line, col=col, construct="AccECN / ECN (IP ECN field)")
        if first.kind == "punct" and first.text == "-":
            self.i += 1
            flags = ""  # packetdrill's grammar: `-` is a segment with no flag set
        else:
            flags = self.flags()
        bad = set(flags) - _FLAG_LETTERS
        if bad & set("EWA"):
            self.skip_event()
            return Unsupported(line=line, col=col, construct="AccECN / ECN (flags E, W, A)")
        if "U" in bad:
            self.skip_event()
            return Unsupported(line=line, col=col, construct="urgent pointer (flag U)")
        if bad:
            raise ScriptSyntaxError(
                first.line, first.col, msg("unknown TCP flags {f}", f="".join(sorted(bad)))
            )
        seq = self.number(msg("a sequence number (start:end(length))"), "start")
        self.expect("punct", ":", msg("':' in start:end(length)"))
        end = self.number(msg("the end sequence number"), "end")
        self.expect("punct", "(", msg("'(' before the length"))
        length = self.number(msg("the payload length"), "length", U16)
        self.expect("punct", ")", msg("')' after the length"))
        if end - seq != length:
            raise ScriptSyntaxError(
                d.line, d.col, msg("{s}:{e}({n}) is not {n} bytes long", s=seq, e=end, n=length)
            )
        ack: int | None = None
        win: int | None = None
        options: tuple[TcpOption, ...] | None = ()
        while not self.at_end_of_event():
            tok = self.take()
            if tok.kind == "word" and tok.text == "ack":
                ack = self.number(msg("an acknowledgement number"), "ack")
            elif tok.kind == "word" and tok.text == "win":
                win = self.number(msg("a window"), "win", U16)
            elif tok.kind == "punct" and tok.text == "<":
                opts = self.options(line, col)
                if isinstance(opts, Unsupported):
                    self.skip_event()
                    return opts
                options = opts
            elif tok.kind == "word" and tok.text == "urg":
                self.skip_event()
                return Unsupported(line=line, col=col, construct="urgent pointer (urg)")
            else:
                raise self.error(tok, msg("ack N, win N or <options>"))
        return Packet(
            line=line,
            col=col,
            time=time,
            direction=direction,
            flags=flags,
            seq=seq,
            end=end,
            length=length,
            ack=ack,
            win=win,
            options=options,
        )

    def flags(self) -> str:
        parts: list[str] = []
        while (t := self.peek()) is not None and (t.kind == "word" or t.text == "."):
            if parts and t.space:
                break
            parts.append(t.text)
            self.i += 1
        return "".join(parts)

    def options(self, line: int, col: int) -> tuple[TcpOption, ...] | None | Unsupported:
        if (t := self.peek()) is not None and t.kind == "ellipsis":
            self.i += 1
            self.expect("punct", ">", msg("'>' after <..."))
            return None
        out: list[TcpOption] = []
        while True:
            tok = self.take()
            if tok.kind != "word":
                raise self.error(tok, msg("a TCP option (mss, sackOK, TS, nop, wscale, sack)"))
            name = tok.text
            for pattern, construct in UNSUPPORTED_OPTIONS:
                if re.match(pattern, name):
                    return Unsupported(line=line, col=col, construct=construct)
            if name in ("nop", "eol", "sackOK"):
                out.append(TcpOption(name))  # type: ignore[arg-type]
            elif name in ("mss", "wscale"):
                v = self.number(
                    msg("a number after {o}", o=name), name, U16 if name == "mss" else U8
                )
                out.append(TcpOption(name, (v,)))  # type: ignore[arg-type]
            elif name == "TS":
                self.expect("word", "val", msg("val after TS"))
                val = self.number(msg("the TS value"), "TS val")
                self.expect("word", "ecr", msg("ecr after TS val N"))
                out.append(TcpOption("TS", (val, self.number(msg("the TS echo reply"), "TS ecr"))))
            elif name == "sack":
                out.append(TcpOption("sack", self.sack_blocks()))
            else:
                return Unsupported(line=line, col=col, construct=f"TCP option {name}")
            sep = self.take()
            if sep.text == ">":
                return tuple(out)
            if sep.text != ",":
                raise self.error(sep, msg("',' or '>' in the options"))

    def sack_blocks(self) -> tuple[int, ...]:
        vals: list[int] = []
        while (t := self.peek()) is not None and t.kind == "num":
            vals.append(self.number(msg("a SACK block start"), "sack"))
            self.expect("punct", ":", msg("':' in a SACK block"))
            vals.append(self.number(msg("a SACK block end"), "sack"))
        if not vals:
            tok = self.take()
            raise self.error(tok, msg("SACK blocks (left:right)"))
        return tuple(vals)

    # --- syscalls ----------------------------------------------------------------------------
    def syscall(self, line: int, col: int, time: EventTime) -> Event:
        name_tok = self.take()
        name = name_tok.text
        if name in UNSUPPORTED_SYSCALLS or name not in SYSCALLS:
            self.skip_event()
            construct = UNSUPPORTED_SYSCALLS.get(name, f"system call {name}")
            return Unsupported(line=line, col=col, construct=construct)
        self.take()  # (
        args = self.args(")")
        if name == "ioctl" and not (len(args) > 1 and _ioctl_name(args[1]) in IOCTLS):
            self.skip_event()
            return Unsupported(line=line, col=col, construct="system call ioctl")
        self.expect("punct", "=", msg("'=' and the expected return value"))
        self.skip_comments()
        ret = self.number(msg("the expected return value"))
        errno: str | None = None
        if (t := self.peek()) is not None and t.kind == "word":
            errno = t.text
            self.i += 1
        if (t := self.peek()) is not None and t.text == "(":
            self.skip_balanced()
        if not self.at_end_of_event():
            tok = self.take()
            raise self.error(tok, msg("the end of the line"))
        for n in _names(args):
            for pattern, construct in UNSUPPORTED_NAMES:
                if re.match(pattern, n):
                    return Unsupported(line=line, col=col, construct=f"{construct} ({n})")
        return Syscall(line=line, col=col, time=time, name=name, args=args, ret=ret, errno=errno)

    def skip_balanced(self) -> None:
        depth = 0
        while (t := self.peek()) is not None and t.kind != "nl":
            self.i += 1
            if t.text == "(":
                depth += 1
            elif t.text == ")":
                depth -= 1
                if depth == 0:
                    return

    def args(self, close: str) -> tuple[Arg, ...]:
        out: list[Arg] = []
        self.skip_comments()
        if (t := self.peek()) is not None and t.text == close:
            self.i += 1
            return ()
        while True:
            out.append(self.arg())
            self.skip_comments()
            sep = self.take()
            if sep.text == close:
                return tuple(out)
            if sep.text != ",":
                raise self.error(sep, msg("',' or '{c}'", c=close))

    def arg(self) -> Arg:
        self.skip_comments()
        tok = self.take()
        if tok.kind == "ellipsis":
            return Elided()
        if tok.kind == "num" or tok.text == "-":
            self.i -= 1
            return self.number(msg("a number"))
        if tok.kind == "string":
            return Str(tok.text[1:-1])
        if tok.text == "[":
            return ListArg(self.args("]"))
        if tok.text == "{":
            return self.struct()
        if tok.kind == "word":
            names = [tok.text]
            if (t := self.peek()) is not None and t.text == "(":  # htons(8080), inet_addr("…")
                self.i += 1
                self.args(")")
                return Name((tok.text + "()",))
            while (t := self.peek()) is not None and t.text == "|":
                self.i += 1
                names.append(self.expect("word", None, msg("a name after |")).text)
            return Name(tuple(names))
        raise self.error(tok, msg("an argument"))

    def struct(self) -> StructArg:
        fields: list[tuple[str, Arg]] = []
        self.skip_comments()
        if (t := self.peek()) is not None and t.text == "}":
            self.i += 1
            return StructArg(())
        while True:
            self.skip_comments()
            if (t := self.peek()) is not None and t.kind == "ellipsis":
                self.i += 1
            else:
                key = self.expect("word", None, msg("a field name")).text
                self.expect("punct", "=", msg("'=' after {f}", f=key))
                fields.append((key, self.arg()))
            sep = self.take()
            if sep.text == "}":
                return StructArg(tuple(fields))
            if sep.text != ",":
                raise self.error(sep, msg("',' or '{c}'", c="}"))


def _names(args: tuple[Arg, ...]) -> list[str]:
    out: list[str] = []
    for a in args:
        if isinstance(a, Name):
            out.extend(a.names)
        elif isinstance(a, ListArg):
            out.extend(_names(a.items))
        elif isinstance(a, StructArg):
            out.extend(_names(tuple(v for _, v in a.fields)))
    return out


def _ioctl_name(a: Arg) -> str | None:
    return a.names[0] if isinstance(a, Name) and len(a.names) == 1 else None


def shell(tok: Token) -> Event:
    """A ```` `command` ```` line: the selftests' defaults.sh and ``sysctl`` settings; any
    other command is unsupported (the model has no shell)."""
    body = tok.text[1:-1].strip()
    sysctls: list[tuple[str, str]] = []
    offloads: list[tuple[str, bool]] = []
    defaults = False
    for cmd in re.split(r"\s*(?:;|&&|\n)\s*", body.replace("\\\n", " ")):
        words = cmd.split()
        if not words:
            continue
        if words[0].endswith("defaults.sh") or _RESTORE.match(words[0]):
            defaults = defaults or words[0].endswith("defaults.sh")
            continue
        if words[0].endswith("set_sysctls.py"):
            for setting in words[1:]:
                m = _PROC_SYSCTL.match(setting)
                if m is None:
                    return Unsupported(
                        line=tok.line,
                        col=tok.col,
                        construct=f"sysctl {setting[:40]}",
                        text=cmd[:60],
                    )
                sysctls.append((m.group(1), m.group(2)))
            continue
        if words[0] == "ethtool":
            feats = _ethtool(words)
            if isinstance(feats, str):
                return Unsupported(line=tok.line, col=tok.col, construct=feats, text=cmd[:60])
            offloads.extend(feats)
            continue
        if words[0] != "sysctl":
            return Unsupported(
                line=tok.line, col=tok.col, construct=f"shell command {words[0]}", text=cmd[:60]
            )
        for setting in _sysctl_words(cmd):
            m = _SYSCTL.match(setting)
            if m is None:
                return Unsupported(
                    line=tok.line, col=tok.col, construct=f"sysctl {setting[:40]}", text=cmd[:60]
                )
            sysctls.append((m.group(1).removeprefix("net.ipv4."), _arith(m.group(2).strip('"'))))
    return Shell(
        line=tok.line,
        col=tok.col,
        command=body,
        sysctls=tuple(sysctls),
        defaults=defaults,
        offloads=tuple(offloads),
    )


ETHTOOL_FEATURES = frozenset({"tso", "gso"})


def _ethtool(words: list[str]) -> list[tuple[str, bool]] | str:
    """``ethtool -K <dev> tso off gso off``: the TSO/GSO settings of the tun device (which
    decide whether the kernel hands it TSO packets or MSS-sized ones); any other ethtool
    use or feature is unsupported (the construct's name, as a string)."""
    if len(words) < 5 or words[1] not in ("-K", "--features", "--offload") or not len(words) % 2:
        return "ethtool " + " ".join(words[1:2])
    out: list[tuple[str, bool]] = []
    for feat, value in zip(words[3::2], words[4::2], strict=True):
        if feat not in ETHTOOL_FEATURES or value not in ("on", "off"):
            return f"ethtool feature {feat}"
        out.append((feat, value == "on"))
    return out


def _sysctl_words(cmd: str) -> list[str]:
    """``sysctl -q a=1 b="1 2 3"``: the settings, quotes kept together."""
    out = re.findall(r'(\S+="[^"]*"|\S+=\S+)', cmd)
    return [w for w in out if not w.startswith("-")]


def _arith(value: str) -> str:
    """Expand the ``$((15*1024*1024))`` arithmetic defaults.sh-style lines use."""

    def ev(m: re.Match[str]) -> str:
        total = 0
        for term in re.findall(r"[+-]?[^+-]+", m.group(1).replace(" ", "")):
            prod = 1
            for f in term.lstrip("+-").split("*"):
                prod *= int(f)
            total += -prod if term.startswith("-") else prod
        return str(total)

    return _ARITH.sub(ev, value)

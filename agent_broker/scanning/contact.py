"""Contact-detail detectors: each takes a `Text` and returns the span of its first hit.

Every detector starts from a cheap anchor that any hit must contain ("@", "://", "www",
an inner dot, a digit run, a platform name) and only then runs a precise pattern near it,
so a clean 10,000-character body costs a few literal searches. Regexes only propose; the
judgment (is this suffix real, is this IP public) lives in `hosts` and `phones`.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from agent_broker.scanning import hosts
from agent_broker.scanning.phones import phone_at
from agent_broker.scanning.text import Span, Text, earliest, occurrences, windows, word

_SP = r"[^\S\n]"
_LOCAL_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_.+%-")


def _glued(char: str) -> bool:
    """A character that makes a candidate the tail of a longer token."""
    return char.isalnum() or char in "_@.-"


# --- email -----------------------------------------------------------------------------

_EMAIL_HOST = re.compile(r"(?:[a-z0-9-]{1,63}\.(?=\w))++([a-z]{2,24}+)(?![\w-])")
# "logo@2x.png" is a retina asset name, not an address.
_FILE_EXTENSIONS = frozenset(
    "png jpg jpeg gif svg webp ico bmp tiff pdf js mjs ts css json yaml yml toml txt csv"
    " html htm xml zip gz tar whl".split()
)


def find_email(t: Text) -> Span | None:
    low = t.low
    for at in t.at_signs:
        start = at
        while start > max(0, at - 64) and (low[start - 1] in _LOCAL_CHARS):
            start -= 1
        if start == at or (start and (_glued(low[start - 1]) or low[start - 1] in "+%")):
            continue
        host = _EMAIL_HOST.match(low, at + 1)
        if host is None or host.group(1) in _FILE_EXTENSIONS:
            continue
        if not hosts.is_reserved(low[at + 1 : host.end()]):
            return start, host.end()
    return None


# --- obfuscated email and domain -------------------------------------------------------

_BRACKET_AT = rf"{_SP}*[\[({{<]{_SP}*(?:at|@){_SP}*[\])}}>]{_SP}*"
_BRACKET_DOT = rf"{_SP}*[\[({{<]{_SP}*(?:dot|\.){_SP}*[\])}}>]{_SP}*"
_LABEL = r"[a-z0-9-]{1,63}+"
# "name [at] host [dot] com", "name {at} host (dot) io", "name @ host . com".
_OBFUSCATED_SYMBOL = re.compile(
    rf"(?<![\w.+-])[\w.+-]{{1,64}}+(?:{_BRACKET_AT}|{_SP}+@{_SP}*|@{_SP}+)"
    rf"(?P<host>{_LABEL}(?:(?:{_BRACKET_DOT}|{_SP}+dot{_SP}+|{_SP}*\.{_SP}*){_LABEL}){{1,3}}+)"
    r"(?![\w(\[-])"
)
# "name AT host DOT com": plain words need a spelled or bracketed dot, otherwise
# "I work at home. It is ..." would read as home.it.
_OBFUSCATED_WORDS = re.compile(
    rf"(?<![\w.+-])[\w.+-]{{1,64}}+{_SP}+at{_SP}+"
    rf"(?P<host>{_LABEL}(?:(?:{_BRACKET_DOT}|{_SP}+dot{_SP}+|\.){_LABEL}){{1,3}}+)"
    r"(?![\w(\[-])"
)
# "acme [dot] io", "acme(.)io": a bracketed dot is deliberate obfuscation.
_OBFUSCATED_DOMAIN = re.compile(rf"(?<![\w.-]){_LABEL}(?:{_BRACKET_DOT}{_LABEL}){{1,3}}+(?![\w-])")
_DOT_SEPARATOR = re.compile(rf"{_BRACKET_DOT}|{_SP}+dot{_SP}+|{_SP}*\.{_SP}*")
_SPELLED_DOT = re.compile(r"\bdot\b|[\[({<]")
# Anchors: a bracketed "at" or dot, the word "dot", a spaced or bracketed "@". Each is
# literal-led; a closing bracket is what makes "[at]" or "(.)" rare in prose.
_ANCHORS = (
    re.compile(r"at[ \t]?[\])}>]"),
    re.compile(r"\.[ \t]?[\])}>]"),
    word("dot", r"(?!\w)").pattern,
)
_REACH_BACK, _REACH_AHEAD = 90, 280


def _host_of(obfuscated: str) -> str:
    return ".".join(_DOT_SEPARATOR.split(obfuscated))


def _spaced_or_bracketed(low: str, at: int) -> bool:
    """ "name @ host", "name@ host", "name [@] host"; not an indented "    @property"."""
    if low.startswith((" ", "\t"), at + 1) or (at and low[at - 1] in "[({<"):
        return True
    return at > 1 and low[at - 1] in " \t" and not low[at - 2].isspace()


def _scan_obfuscated(t: Text) -> tuple[Span | None, Span | None]:
    """(first obfuscated email, first obfuscated domain)."""
    low = t.low
    anchors = sorted(
        [m.start() for anchor in _ANCHORS for m in anchor.finditer(low)]
        + [i for i in t.at_signs if _spaced_or_bracketed(low, i)]
    )
    email: Span | None = None
    domain: Span | None = None
    for lo, hi in windows(anchors, _REACH_BACK, _REACH_AHEAD):
        if email is None:
            for m in _OBFUSCATED_SYMBOL.finditer(low, lo, hi):
                if hosts.is_reportable_domain(_host_of(m["host"]), has_path=True):
                    email = m.span()
                    break
        if email is None:
            for m in _OBFUSCATED_WORDS.finditer(low, lo, hi):
                if _SPELLED_DOT.search(m["host"]) and hosts.is_reportable_domain(
                    _host_of(m["host"]), has_path=True
                ):
                    email = m.span()
                    break
        if domain is None:
            for m in _OBFUSCATED_DOMAIN.finditer(low, lo, hi):
                if hosts.is_reportable_domain(_host_of(m.group()), has_path=True):
                    domain = m.span()
                    break
        if email is not None and domain is not None:
            break
    return email, domain


def find_obfuscated_email(t: Text) -> Span | None:
    return t.once(_scan_obfuscated)[0]


# --- URLs ------------------------------------------------------------------------------

# hxxp is the usual "defanged" spelling and reaches the same place once re-fanged.
_SCHEMES = frozenset("http https hxxp hxxps ftp ftps sftp ws wss".split())
_URL_REST = re.compile(r"://[^\s<>\"'`\])]++")
_WWW = re.compile(r"www\d{0,3}\.[a-z0-9-]++(?:\.[a-z0-9-]++)*+")


def _scheme_start(low: str, colon: int) -> int | None:
    start = colon
    while start > max(0, colon - 5) and low[start - 1].isalpha():
        start -= 1
    if low[start:colon] not in _SCHEMES or (start and _glued(low[start - 1])):
        return None
    return start


def find_url(t: Text) -> Span | None:
    low = t.low
    for colon in occurrences(low, "://"):
        start = _scheme_start(low, colon)
        if start is None:
            continue
        rest = _URL_REST.match(low, colon)
        if rest is None:
            continue
        end = rest.end()
        try:
            host = urlsplit(low[start:end]).hostname or ""
        except ValueError:  # malformed port or IPv6 literal: still an address
            return start, end
        if hosts.is_reportable_url_host(host):
            return start, end
    for start in occurrences(low, "www"):
        if start and (_glued(low[start - 1]) or low[start - 1] == "/"):
            continue
        m = _WWW.match(low, start)
        if m and hosts.is_reportable_url_host(m.group()):
            return m.span()
    return None


# --- bare domains and messaging links (one pass over inner dots) ------------------------

# Any host name has a dot followed by a letter; sentences put a space after theirs.
_INNER_DOT = re.compile(r"\.(?=[a-z])")
_HOST_RUN = re.compile(r"[a-z0-9.-]*+")
# A maximal dotted run ending in letters, not followed by '(' or '[' (a method call or
# indexing in a code snippet) nor by a further label.
_DOMAIN = re.compile(r"(?:[a-z0-9][a-z0-9-]{0,62}\.(?=\w))++[a-z]{2,24}+(?![\w-]|\.[\w-]|[(\[])")
_MESSAGING_LINK = re.compile(
    r"(?:www\.)?(?:t\.me|telegram\.(?:me|dog)|wa\.me|signal\.(?:me|group)|discord\.gg"
    r"|discord(?:app)?\.com/invite|chat\.whatsapp\.com|api\.whatsapp\.com/send|m\.me"
    r"|line\.me|invite\.viber\.com|u\.wechat\.com|join\.skype\.com|kik\.me"
    r"|snapchat\.com/add|threema\.id)(?![\w-]|\.\w)(?:[/?#][^\s<>\"'`)\]]*+)?"
)

_LINK_SUFFIXES = frozenset({"dog", "group"})  # telegram.dog, signal.group


def _host_run_end(text: str, pos: int) -> int:
    m = _HOST_RUN.match(text, pos)
    return m.end() if m else pos


def _scan_dotted(t: Text) -> tuple[Span | None, Span | None]:
    """(first bare domain, first messaging link)."""
    low = t.low
    domain: Span | None = None
    link: Span | None = None
    covered = -1
    for dot in _INNER_DOT.finditer(low):
        if dot.start() < covered:
            continue
        covered = _host_run_end(low, dot.start())
        # Most dotted tokens are file names and attribute access ("data.csv",
        # "self.total"): a last label that is no suffix rules the token out cheaply.
        suffix = low[dot.start() + 1 : covered].rstrip(".-").rpartition(".")[2]
        if suffix not in _LINK_SUFFIXES and suffix not in hosts.SUFFIXES:
            continue
        # The token's start is found by matching forwards on the reversed text.
        start = len(low) - _host_run_end(t.reversed, len(low) - dot.start())
        before = low[start - 1] if start else " "
        if before.isalnum() or before in "_@\\":
            continue
        if link is None and (m := _MESSAGING_LINK.match(low, start)):
            scheme = _scheme_start(low, start - 3) if low.endswith("://", 0, start) else None
            link = (start if scheme is None else scheme, m.end())
        if domain is None and before != "/" and (m := _DOMAIN.match(low, start)):
            path = low.startswith("/", m.end()) and low[m.end() + 1 : m.end() + 2].isalnum()
            if hosts.is_reportable_domain(m.group(), has_path=path):
                domain = m.span()
        if domain is not None and link is not None:
            break
    return domain, link


def find_domain(t: Text) -> Span | None:
    return earliest(t.once(_scan_dotted)[0], t.once(_scan_obfuscated)[1])


def find_messaging_link(t: Text) -> Span | None:
    return t.once(_scan_dotted)[1]


# --- IP addresses ----------------------------------------------------------------------

# On Text.shape (digits as "0"). "1.2.3.4-beta" is a version, so a trailing '-' or a
# further dotted part disqualifies.
_IPV4 = re.compile(r"0(?:0{0,2})\.0{1,3}\.0{1,3}\.0{1,3}(?P<port>:0{1,5})?(?![\w-]|\.\w)")
# Hex digits and colons with at least two colons; `ipaddress` then rejects times
# ("12:30:45") and MAC addresses, which have neither eight groups nor a "::".
_IPV6 = re.compile(r"(?<![\w:.])(?=[0-9a-f]*:[0-9a-f]*:)[0-9a-f:]{2,39}+(?![\w:.])")


def find_ip(t: Text) -> Span | None:
    shape = t.shape
    for m in _IPV4.finditer(shape):
        start = m.start()
        if start and (_glued(shape[start - 1]) or shape[start - 1] == ":"):
            continue
        address_end = m.start("port") if m["port"] else m.end()
        if hosts.is_public_ip(t.raw[start:address_end]):
            return m.span()
    low = t.low
    for lo, hi in _ipv6_windows(low):
        for m in _IPV6.finditer(low, lo, hi):
            if hosts.is_public_ip(m.group()):
                return m.span()
    return None


# Two colons at most four hex digits apart: "::", "db8:85a3:". Markdown's lone colons
# ("Price: 12") never match, so the full IPv6 pattern only runs near likely addresses.
_COLON_PAIR = re.compile(r":[0-9a-f]{0,4}:")


def _ipv6_windows(low: str) -> list[Span]:
    return windows([m.start() for m in _COLON_PAIR.finditer(low)], 40, 44)


# --- messaging handles: "@fastbot" and "telegram: fastbot88" -----------------------------

# Connector words between a platform name and an id ("me at", "id:", "is", "on").
_CONNECTORS = (
    rf"(?P<conn>(?:{_SP}*+(?::|=|-(?={_SP})|(?:id|handle|user{_SP}?name|user|number|no"
    rf"|is|me|at|on|via|account|contact)(?!\w)))*+){_SP}*+"
)
_PLATFORMS = tuple(
    word(name, rf"(?!\w){_CONNECTORS}")
    for name in ("telegram signal wechat skype discord viber kik snapchat threema".split())
) + (word("whats", rf"{_SP}?app(?!\w){_CONNECTORS}"),)
# "id: x" or "handle is x" introduces an identifier, whatever it looks like.
_EXPLICIT_ID = re.compile(r"\b(?:id|handle|user\s?name|number|no)\b\s*(?:[:=]|is\b)")
_AT_HANDLE = re.compile(r"@[a-z_][\w.]{2,31}")
_SKYPE_ID = re.compile(r"live:[\w.-]{3,64}")
_TOKEN = re.compile(r"[a-z][\w.#-]{2,39}")
_ID_MARK = re.compile(r"[\d_#]|\w\.\w")


def _mention_id_end(t: Text, pos: int, explicit: bool) -> int | None:
    for pattern in (_AT_HANDLE, _SKYPE_ID):
        m = pattern.match(t.low, pos)
        if m:
            return m.end()
    end = phone_at(t, pos)
    if end is not None:
        return end
    m = _TOKEN.match(t.low, pos)
    if not m:
        return None
    token = m.group().rstrip(".-")
    # Without "id:" the token must look like a username ("agentsmith88", "fast_bot",
    # "agent.smith"), so "Telegram Bot API" and "signal processing" stay clean.
    looks_like_id = _ID_MARK.search(token) and sum(c.isalpha() for c in token) >= 3
    return pos + len(token) if explicit or looks_like_id else None


def find_messaging_mention(t: Text) -> Span | None:
    found: list[Span] = []
    for platform in _PLATFORMS:
        for m in platform.finditer(t.low):
            end = _mention_id_end(t, m.end(), bool(_EXPLICIT_ID.search(m["conn"])))
            if end is not None:
                found.append((m.start(), end))
                break
    return min(found) if found else None


_HANDLE_NAME = re.compile(r"[a-z_][a-z0-9_.]{2,31}+(?![\w@/(-])")
# Decorators, annotations, CSS at-rules, doc tags, chat keywords and placeholders.
_NOT_HANDLES = frozenset(
    """
    dataclass property staticmethod classmethod abstractmethod cached_property lru_cache
    cache wraps contextmanager asynccontextmanager override overload final total_ordering
    singledispatch validator field_validator model_validator root_validator computed_field
    pytest app router api blueprint celery shared_task task retry jit njit functools typing
    dataclasses component injectable input output ngmodule directive pipe hostlistener
    viewchild test before after beforeeach aftereach beforeall afterall mock patch
    autowired service repository controller restcontroller entity table column bean
    configuration value transactional deprecated suppresswarnings functionalinterface
    nullable nonnull notnull param returns return throws see since version author example
    type typedef template link todo fixme note media import keyframes supports charset
    layer apply tailwind container use forward mixin include extend each content page
    namespace here channel everyone all mention mentions types latest next beta alpha canary
    stable main master username user handle yourname yourhandle someone
    """.split()
)
# A line that follows a decorator: another decorator or a definition.
_DEFINITION = re.compile(
    r"[ \t]*(?:@|(?:async[ \t]+)?def\b|class\b|public\b|private\b|protected\b|static\b"
    r"|export\b|function\b|fun\b|override\b|abstract\b|final\b|void\b|const\b|let\b|var\b"
    r"|val\b|interface\b|enum\b|record\b|struct\b|func\b|pub\b|fn\b|suspend\b|get\b|set\b)"
)


def _is_decorator(low: str, at: int, end: int) -> bool:
    if low[low.rfind("\n", 0, at) + 1 : at].strip():
        return False
    next_line = low.find("\n", end)
    return next_line != -1 and _DEFINITION.match(low, next_line + 1) is not None


def find_handle(t: Text) -> Span | None:
    low = t.low
    for at in t.at_signs:
        if at and (_glued(low[at - 1]) or low[at - 1] in "+/"):
            continue
        m = _HANDLE_NAME.match(low, at + 1)
        if m is None:
            continue
        name = m.group().rstrip(".")
        if name.split(".")[0] in _NOT_HANDLES or _is_decorator(low, at, m.end()):
            continue
        return at, at + 1 + len(name)
    return None

# Copyright: xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""One validator per kind of name. Private to the xdplab.testbed collection.

Every module, filter and template that takes a name of one of these kinds checks it here, so a name
that one place accepts is never refused (or worse, accepted differently) by another. Each validator
returns the value unchanged (or canonical) and raises ``ValidationError`` naming the bad value and
where it came from; nothing here touches the host.

The rules are what the consumer can take without quoting: a name that reaches a command line, a file
name, an nftables ruleset, a shell-parsed file (/etc/default/grub) or a QEMU option string is held to
a character set in which it means nothing but itself there.
"""

from __future__ import annotations

import hashlib
import ipaddress
import re
from typing import Any

IFNAMSIZ = 16  # includes the terminating NUL: at most 15 bytes of name
NETNS_NAME_MAX = 32  # our limit: names end up in /run/netns/<name> and in inventories, logs and ledgers
LEDGER_NAME_MAX = 64
RECORD_NAME_MAX = 64
CPU_MAX = 8191  # NR_CPUS ceiling of the largest kernel configs (CONFIG_NR_CPUS <= 8192)

# Interface and namespace names: what the kernel takes (dev_valid_name: no '/', ':', whitespace, not
# '.'/'..'), narrowed to characters that mean nothing to ip(8), nft, a shell or a path: no '%' (a
# kernel name template, 'veth%d'), no quotes or backslashes, no NUL, no leading '-' (an option).
_PLAIN = r"A-Za-z0-9_.+="  # and "-", last in each class
IFNAME_RE = re.compile(rf"^[A-Za-z0-9_][{_PLAIN}-]{{0,14}}\Z")
NETNS_RE = re.compile(rf"^[A-Za-z0-9_][{_PLAIN}@-]{{0,31}}\Z")
LEDGER_NAME_RE = re.compile(rf"^[A-Za-z0-9_][{_PLAIN}:@-]{{0,63}}\Z")
# pktgen device: an interface, optionally '@<queue>' (pktgen's own multiqueue naming).
PKTGEN_DEV_RE = re.compile(rf"^[A-Za-z0-9_][{_PLAIN}-]{{0,14}}(@[0-9]{{1,5}})?\Z")
RUN_ID_RE = re.compile(r"^[0-9]{8}T[0-9]{6}Z-[0-9a-f]{6}\Z")
# Scenario / variant / tool names in record file names '<scenario>__<variant>__<hash>.json': no '__'
# inside a name and none at its ends, so the separator is unambiguous and two distinct names never
# give the same file (nothing is rewritten: the name is the file name part).
RECORD_NAME_RE = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9.=+-]|_(?=[A-Za-z0-9.=+-])){0,63}\Z")
# Kernel command line: parameter names and values that GRUB's shell-like parser and /bin/sh (update-grub
# sources /etc/default/grub) take literally inside double quotes: no quote, '$', '`', '\\', whitespace,
# ';', '&', '|', '<', '>', '#', '*', '?', '[', '~', NUL.
CMDLINE_KEY_RE = re.compile(r"^[a-z][a-z0-9_.-]{0,63}\Z")
CMDLINE_VALUE_RE = re.compile(r"^[A-Za-z0-9_.,:/+=@%^-]{1,256}\Z")
# QEMU identifiers (ids, mount tags, netdev names): letters, digits, '_', '-', '.'; QEMU itself
# requires ids to start with a letter.
QEMU_ID_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_.-]{0,30}\Z")
# nftables identifiers (table, chain, counter names): nft's own identifier syntax.
NFT_NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,63}\Z")
NFT_FAMILIES = ("ip", "ip6", "inet", "arp", "bridge", "netdev")
# A link-layer (Ethernet) address, lower case.
LLADDR_RE = re.compile(r"^[0-9a-f]{2}(:[0-9a-f]{2}){5}\Z")


class ValidationError(ValueError):
    """A name or value refused; the message names it and where it came from."""


def _where(where: str) -> str:
    return f"{where}: " if where else ""


def _str(value: Any, what: str, where: str) -> str:
    if not isinstance(value, str) or not value:
        raise ValidationError(f"{_where(where)}{what} {value!r} must be a non-empty string")
    return value


def ifname(value: Any, where: str = "") -> str:
    """A network interface name: at most 15 bytes (IFNAMSIZ - 1), no template, path or option."""
    name = _str(value, "interface name", where)
    size = len(name.encode("utf-8", "surrogatepass"))
    if size >= IFNAMSIZ:
        raise ValidationError(
            f"{_where(where)}interface must be a network interface name, got {name!r}: {size} bytes, longer"
            f" than {IFNAMSIZ - 1} (IFNAMSIZ)")
    if not IFNAME_RE.match(name) or ".." in name:
        raise ValidationError(
            f"{_where(where)}interface must be a network interface name (letters, digits and '_.+=-', not"
            f" starting with '-' or '.'; no '..', '/', ':', '%', quote, whitespace or NUL), got {name!r}")
    return name


def netns_name(value: Any, where: str = "namespace") -> str:
    """A network namespace name (a file in /run/netns): at most 32 bytes, no '.', '..', '/' or option."""
    name = _str(value, "namespace name", where)
    size = len(name.encode("utf-8", "surrogatepass"))
    if size > NETNS_NAME_MAX:
        raise ValidationError(f"{_where(where)}namespace name {name!r} is {size} bytes, longer than {NETNS_NAME_MAX}")
    if not NETNS_RE.match(name):
        raise ValidationError(
            f"{_where(where)}namespace name {name!r} must be letters, digits and '_.+=@-', not start with"
            " '-' or '.', and hold no '/', '..', escape, whitespace or NUL")
    if ".." in name:
        raise ValidationError(f"{_where(where)}namespace name {name!r} must not contain '..'")
    return name


def ledger_name(value: Any, what: str = "name", where: str = "ledger") -> str:
    """A name stored in a ledger key (namespace, interface, nft table) that teardown puts on a command line."""
    if not isinstance(value, str) or not LEDGER_NAME_RE.match(value) or ".." in value:
        raise ValidationError(
            f"{_where(where)}{what} must be a plain name (letters, digits, '_.+=:@-', not starting with"
            f" '-' or '.'), got {value!r}")
    return value


def pktgen_device(value: Any, where: str = "pktgen") -> str:
    """A pktgen device: an interface name, optionally '@<queue>'."""
    if not isinstance(value, str) or not PKTGEN_DEV_RE.match(value) or ".." in value:
        raise ValidationError(f"{_where(where)}interface must be a network device name (optionally @queue), "
                              f"got {value!r}")
    ifname(value.split("@", 1)[0], where)
    return value


def run_id(value: Any, where: str = "run id") -> str:
    """A run id as new_run_id() makes them (20261129T215000Z-1a2b3c): it names a results directory."""
    if not isinstance(value, str) or not RUN_ID_RE.match(value):
        raise ValidationError(f"{_where(where)}{value!r} is not a run id like 20261129T215000Z-1a2b3c")
    return value


def record_name(value: Any, what: str = "name", where: str = "record") -> str:
    """A scenario, variant or tool name that is part of a record's file name."""
    if not isinstance(value, str) or not RECORD_NAME_RE.match(value):
        raise ValidationError(
            f"{_where(where)}{what} {value!r} must be 1-64 letters, digits and '.=+-', with single '_'"
            " between them (no '/', '__', leading/trailing '_' or '.')")
    if value.startswith(".") or ".." in value:
        raise ValidationError(f"{_where(where)}{what} {value!r} must not start with '.' or contain '..'")
    return value


def record_file_part(value: Any) -> str:
    """The part of a record file name that stands for a scenario or variant name, distinct for distinct
    names: a plain name (RECORD_NAME_RE) is itself; any other is made path-safe and given a digest of
    the whole name after a '~' (a character no plain name holds), so 'a/b' and 'a_b' never share a file."""
    text = str(value)
    if RECORD_NAME_RE.match(text) and not text.startswith(".") and ".." not in text:
        return text
    safe = re.sub(r"_+", "_", re.sub(r"\.{2,}", "_", re.sub(r"[^A-Za-z0-9_.=+-]+", "_", text))).strip("._")
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    return f"{safe[:48] or 'x'}~{digest}"


def cpulist(text: Any, where: str = "cpus", max_cpu: int = CPU_MAX) -> list[int]:
    """'0-3,8,10-11' (or an int, or a list of those) -> sorted unique CPU numbers, each <= max_cpu."""
    if isinstance(text, bool):
        raise ValidationError(f"{_where(where)}not a CPU list: {text!r}")
    if isinstance(text, int):
        if not 0 <= text <= max_cpu:
            raise ValidationError(f"{_where(where)}CPU {text!r} is out of range 0..{max_cpu}")
        return [text]
    if isinstance(text, list):
        if len(text) > max_cpu + 1:
            raise ValidationError(f"{_where(where)}CPU list of {len(text)} items is longer than {max_cpu + 1}")
        return sorted({c for item in text for c in cpulist(item, where, max_cpu)})
    if not isinstance(text, str) or len(text) > 4096:
        raise ValidationError(f"{_where(where)}not a CPU list: {str(text)[:80]!r}")
    cpus: set[int] = set()
    for part in text.strip().split(","):
        part = part.strip()
        if not part:
            continue
        m = re.fullmatch(r"([0-9]{1,6})(?:-([0-9]{1,6}))?", part)
        if not m:
            raise ValidationError(f"{_where(where)}not a CPU list: {text!r}")
        lo = int(m.group(1))
        hi = int(m.group(2) or lo)
        if hi < lo:
            raise ValidationError(f"{_where(where)}not a CPU list: {text!r} ({part} is a reversed range)")
        if hi > max_cpu:
            raise ValidationError(f"{_where(where)}CPU list {text!r}: {hi} is out of range 0..{max_cpu}")
        cpus.update(range(lo, hi + 1))
    return sorted(cpus)


def cmdline_param(key: Any, value: Any, where: str = "kernel_cmdline") -> str | None:
    """One kernel command line parameter as it will be written: 'key', 'key=value', or None (remove)."""
    if not isinstance(key, str) or not CMDLINE_KEY_RE.match(key):
        raise ValidationError(f"{_where(where)}{key!r} is not a kernel parameter name")
    if value is None or value is False:
        return None
    if value is True:
        return key
    if isinstance(value, int | float):
        value = str(value)
    if not isinstance(value, str) or not CMDLINE_VALUE_RE.match(value):
        raise ValidationError(
            f"{_where(where)}{key}={value!r}: a kernel parameter value may hold only letters, digits and"
            " '_.,:/+=@%^-' (no quote, '$', '`', '\\', whitespace or shell character)")
    if ".." in value.split("/"):
        raise ValidationError(f"{_where(where)}{key}={value!r}: a kernel parameter value has no '..' path component")
    return f"{key}={value}"


def qemu_id(value: Any, what: str = "id", where: str = "qemu") -> str:
    """A QEMU identifier (id=, mount_tag=, netdev name): refused unless plain."""
    if not isinstance(value, str) or not QEMU_ID_RE.match(value):
        raise ValidationError(f"{_where(where)}{what} {value!r} must start with a letter and hold only letters,"
                              " digits and '_.-' (at most 31)")
    return value


def qemu_value(value: Any, what: str = "value", where: str = "qemu") -> str:
    """A value (a path) inside a QEMU option string 'k=v,k=v': commas doubled (QEMU's escape), control
    characters refused."""
    if not isinstance(value, str) or not value:
        raise ValidationError(f"{_where(where)}{what} {value!r} must be a non-empty string")
    if any(ord(c) < 32 or ord(c) == 127 for c in value):
        raise ValidationError(f"{_where(where)}{what} {value!r} holds a control character")
    return value.replace(",", ",,")


def qemu_verbatim(value: Any, what: str = "value", where: str = "qemu") -> str:
    """A value QEMU takes whole, commas and all (``-serial file:PATH``, ``-pidfile``, ``-kernel``,
    ``-initrd``): nothing to escape (a doubled comma would reach the file name), control characters refused."""
    qemu_value(value, what, where)
    return value


_SYSCTL_CHARS_RE = re.compile(r"^[A-Za-z0-9_.\-/@:+]+\Z")


def _slashdot(name: str) -> str:
    """sysctl(8)'s (procps) rule: the first separator says the form. A name whose first separator is '/'
    is a path already; in a dotted name a '/' stands for a '.' inside one component (``eth0/1`` for the
    VLAN interface eth0.1), so '.' and '/' swap."""
    first = re.search(r"[./]", name)
    if first is None or first.group() == "/":
        return name
    return name.translate(str.maketrans("./", "/."))


def sysctl_path(value: Any, what: str = "sysctl") -> str:
    """The /proc/sys-relative path of a sysctl name, in either of sysctl(8)'s forms:
    ``net.ipv4.conf.eth0/1.rp_filter`` or ``net/ipv4/conf/eth0.1/rp_filter`` -> net/ipv4/conf/eth0.1/rp_filter.
    Refused, naming it: anything but a plain name, empty, '.' or '..' components."""
    if not isinstance(value, str) or not _SYSCTL_CHARS_RE.match(value):
        raise ValidationError(f"{what} {value!r} is not a sysctl name (letters, digits, '_-@:+', '.' or '/' "
                              "separators)")
    path = _slashdot(value)
    if any(part in ("", ".", "..") for part in path.split("/")):
        raise ValidationError(f"{what} {value!r} is not a sysctl name (an empty, '.' or '..' component)")
    return path


def sysctl_dotted(value: Any, what: str = "sysctl") -> str:
    """The canonical (dotted, as ``sysctl -a`` prints it) form of a sysctl name in either form."""
    return sysctl_path(value, what).translate(str.maketrans("./", "/."))


def nft_name(value: Any, what: str = "name", where: str = "nftables") -> str:
    """An nftables identifier (table, chain, counter)."""
    if not isinstance(value, str) or not NFT_NAME_RE.match(value):
        raise ValidationError(f"{_where(where)}{what} {value!r} must be an nftables identifier (a letter, then"
                              " letters, digits and '_')")
    return value


def nft_family(value: Any, where: str = "nftables") -> str:
    if value not in NFT_FAMILIES:
        raise ValidationError(f"{_where(where)}family {value!r} must be one of {', '.join(NFT_FAMILIES)}")
    return value


def ip_address(value: Any, where: str = "address") -> str:
    """An IPv4/IPv6 address (no prefix), canonical."""
    try:
        return ipaddress.ip_address(str(value).strip()).compressed if isinstance(value, str) else \
            ipaddress.ip_address(value).compressed
    except ValueError:
        raise ValidationError(f"{_where(where)}{value!r} is not an IP address") from None


def ip_interface(value: Any, where: str = "address") -> str:
    """An IPv4/IPv6 address with its prefix length (198.18.0.1/24, 2001:db8::1/64), canonical."""
    if not isinstance(value, str) or "/" not in value:
        raise ValidationError(f"{_where(where)}{value!r} is not an address with a prefix length (a.b.c.d/n)")
    try:
        return ipaddress.ip_interface(value.strip()).with_prefixlen
    except ValueError:
        raise ValidationError(f"{_where(where)}{value!r} is not an address with a prefix length") from None


def lladdr(value: Any, where: str = "lladdr") -> str:
    """A 6-byte MAC address, lower case (surrounding blanks and upper case taken)."""
    text = value.strip().lower() if isinstance(value, str) else ""
    if not LLADDR_RE.match(text):
        raise ValidationError(f"{where} must be a MAC address like 02:00:00:00:00:01, got {value!r}")
    return text


# The kinds a filter or a role asks for by name (plugins/filter/validate.py).
KINDS = {
    "ifname": ifname,
    "netns": netns_name,
    "ledger_name": ledger_name,
    "pktgen_device": pktgen_device,
    "run_id": run_id,
    "record_name": record_name,
    "qemu_id": qemu_id,
    "nft_name": nft_name,
    "nft_family": nft_family,
    "ip": ip_address,
}


def check(kind: str, value: Any, where: str = "") -> Any:
    """Validate ``value`` as a ``kind`` name (a key of KINDS)."""
    if kind not in KINDS:
        raise ValidationError(f"unknown kind of name {kind!r} (known: {', '.join(sorted(KINDS))})")
    return KINDS[kind](value, where=where or kind)

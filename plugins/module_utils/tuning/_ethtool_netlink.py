# Copyright (c) xdplab.testbed contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Ethtool netlink access through pyroute2 (private to xdplab.testbed).

This module is private to the xdplab.testbed collection: its API may change
without notice.  Modules and other module_utils of the collection import it;
nothing outside the collection should.

pyroute2 0.9.7 ships the ethtool generic-netlink family but only message
classes for strings, link info/modes, WoL, rings and module EEPROM; features,
channels and coalesce go through the legacy ioctl there, and pause and
private flags are missing.  This file adds genetlink message classes for
FEATURES, PRIVFLAGS, RINGS, CHANNELS, COALESCE and PAUSE on top of pyroute2's
``GenericNetlinkSocket``, so every NIC knob is read and written through
ethtool netlink (kernel >= 5.6, CONFIG_ETHTOOL_NETLINK=y) and the kernel's
extended ack message comes back in errors.

The public entry points are :class:`EthtoolNetlink` (one socket, optionally
in a named network namespace) and :func:`read_nic_state`, the read-back used
by the ``nic_tuning`` verify step and by the environment fingerprint.
"""

from __future__ import annotations

import errno
from typing import Any

from ansible_collections.xdplab.testbed.plugins.module_utils.tuning._nic_knobs import (
    BOOL_KEYS,
    MAXIMA,
    SCALAR_KEYS,
)

try:
    from pyroute2.netlink import NLM_F_ACK, NLM_F_REQUEST, genlmsg
    from pyroute2.netlink.exceptions import NetlinkError
    from pyroute2.netlink.generic import GenericNetlinkSocket
    from pyroute2.netlink.generic.ethtool import ethtoolbitset, ethtoolheader

    HAS_PYROUTE2 = True
    PYROUTE2_IMPORT_ERROR: str | None = None
except ImportError as exc:  # pragma: no cover - exercised only without pyroute2
    HAS_PYROUTE2 = False
    PYROUTE2_IMPORT_ERROR = str(exc)
    genlmsg = object  # type: ignore[assignment,misc]
    ethtoolbitset = ethtoolheader = None  # type: ignore[assignment]

    class NetlinkError(Exception):  # type: ignore[no-redef]
        code = 0


ETHTOOL_GENL_NAME = "ethtool"
ETHTOOL_GENL_VERSION = 1

# uapi/linux/ethtool_netlink.h (stable numbering)
MSG_FEATURES_GET = 11
MSG_FEATURES_SET = 12
MSG_PRIVFLAGS_GET = 13
MSG_PRIVFLAGS_SET = 14
MSG_RINGS_GET = 15
MSG_RINGS_SET = 16
MSG_CHANNELS_GET = 17
MSG_CHANNELS_SET = 18
MSG_COALESCE_GET = 19
MSG_COALESCE_SET = 20
MSG_PAUSE_GET = 21
MSG_PAUSE_SET = 22

_HDR = ("header", "ethtoolheader")

# Attribute tables in kernel order (index = attribute type).  Names are the
# short names used by the modules (ethtool CLI names with '_' for '-').
RING_ATTRS = (
    ("unspec", "none"), _HDR,
    ("rx_max", "uint32"), ("rx_mini_max", "uint32"), ("rx_jumbo_max", "uint32"), ("tx_max", "uint32"),
    ("rx", "uint32"), ("rx_mini", "uint32"), ("rx_jumbo", "uint32"), ("tx", "uint32"),
    ("rx_buf_len", "uint32"), ("tcp_data_split", "uint8"), ("cqe_size", "uint32"),
    ("tx_push", "uint8"), ("rx_push", "uint8"), ("tx_push_buf_len", "uint32"), ("tx_push_buf_len_max", "uint32"),
)
CHANNEL_ATTRS = (
    ("unspec", "none"), _HDR,
    ("rx_max", "uint32"), ("tx_max", "uint32"), ("other_max", "uint32"), ("combined_max", "uint32"),
    ("rx", "uint32"), ("tx", "uint32"), ("other", "uint32"), ("combined", "uint32"),
)
COALESCE_ATTRS = (
    ("unspec", "none"), _HDR,
    ("rx_usecs", "uint32"), ("rx_frames", "uint32"), ("rx_usecs_irq", "uint32"), ("rx_frames_irq", "uint32"),
    ("tx_usecs", "uint32"), ("tx_frames", "uint32"), ("tx_usecs_irq", "uint32"), ("tx_frames_irq", "uint32"),
    ("stats_block_usecs", "uint32"), ("adaptive_rx", "uint8"), ("adaptive_tx", "uint8"),
    ("pkt_rate_low", "uint32"), ("rx_usecs_low", "uint32"), ("rx_frames_low", "uint32"),
    ("tx_usecs_low", "uint32"), ("tx_frames_low", "uint32"),
    ("pkt_rate_high", "uint32"), ("rx_usecs_high", "uint32"), ("rx_frames_high", "uint32"),
    ("tx_usecs_high", "uint32"), ("tx_frames_high", "uint32"),
    ("sample_interval", "uint32"), ("cqe_mode_tx", "uint8"), ("cqe_mode_rx", "uint8"),
    ("tx_aggr_max_bytes", "uint32"), ("tx_aggr_max_frames", "uint32"), ("tx_aggr_time_usecs", "uint32"),
)
PAUSE_ATTRS = (
    ("unspec", "none"), _HDR,
    ("autoneg", "uint8"), ("rx", "uint8"), ("tx", "uint8"),
)
FEATURES_ATTRS = (
    ("unspec", "none"), _HDR,
    ("hw", "ethtoolbitset"), ("wanted", "ethtoolbitset"), ("active", "ethtoolbitset"), ("nochange", "ethtoolbitset"),
)
PRIVFLAGS_ATTRS = (("unspec", "none"), _HDR, ("flags", "ethtoolbitset"))


def _msg_class(name: str, attrs: tuple) -> type:
    """Build a genlmsg subclass with the given attribute table."""
    return type(name, (genlmsg,), {"nla_map": attrs, "ethtoolheader": ethtoolheader, "ethtoolbitset": ethtoolbitset})


# Per scalar group: (attribute table, GET, SET)
_SCALAR_GROUPS: dict[str, tuple[tuple, int, int]] = {
    "ring": (RING_ATTRS, MSG_RINGS_GET, MSG_RINGS_SET),
    "channels": (CHANNEL_ATTRS, MSG_CHANNELS_GET, MSG_CHANNELS_SET),
    "coalesce": (COALESCE_ATTRS, MSG_COALESCE_GET, MSG_COALESCE_SET),
    "pause": (PAUSE_ATTRS, MSG_PAUSE_GET, MSG_PAUSE_SET),
}
# Settable keys, boolean keys and maxima are shared with the pure planner.
SETTABLE = SCALAR_KEYS
GROUPS = ("ring", "channels", "coalesce", "pause", "features", "private_flags")


class EthtoolError(Exception):
    """A netlink request failed; carries the group, device and errno."""

    def __init__(self, ifname: str, group: str, code: int, detail: str, op: str = "get") -> None:
        self.ifname = ifname
        self.group = group
        self.code = code
        self.detail = detail
        self.op = op
        super().__init__(f"{op} {group} on {ifname}: {detail} (errno {code})")

    @property
    def unsupported(self) -> bool:
        return self.code == errno.EOPNOTSUPP

    @property
    def no_device(self) -> bool:
        return self.code == errno.ENODEV


def _bitset_to_dict(bitset: Any) -> tuple[dict[str, bool], bool]:
    """Decode a non-compact ethtool bitset into {name: value}.

    Returns (bits, nomask).  With NOMASK the listed bits are the set ones;
    otherwise every bit of the mask is listed and VALUE flags the set ones.
    Unnamed bits are dropped.
    """
    if bitset is None:
        return {}, True
    nomask = bool(bitset.get_attr("ETHTOOL_A_BITSET_NOMASK"))
    bits_nla = bitset.get_attr("ETHTOOL_A_BITSET_BITS")
    out: dict[str, bool] = {}
    if bits_nla is None:
        return out, nomask
    for bit in bits_nla.get_attrs("ETHTOOL_A_BITSET_BITS_BIT"):
        name = bit.get_attr("ETHTOOL_A_BITSET_BIT_NAME")
        if not name:
            continue
        out[name] = True if nomask else bool(bit.get_attr("ETHTOOL_A_BITSET_BIT_VALUE"))
    return out, nomask


def _bitset_request(values: dict[str, bool]) -> dict:
    """Encode {name: bool} as a non-compact bitset with an implicit mask (only listed bits change)."""
    bits = []
    for name, value in values.items():
        attrs: list[list[Any]] = [["ETHTOOL_A_BITSET_BIT_NAME", name]]
        if value:
            attrs.append(["ETHTOOL_A_BITSET_BIT_VALUE", True])
        bits.append(["ETHTOOL_A_BITSET_BITS_BIT", {"attrs": attrs}])
    return {"attrs": [["ETHTOOL_A_BITSET_BITS", {"attrs": bits}]]}


class EthtoolNetlink:
    """One ethtool generic-netlink socket (optionally inside network namespace ``netns``)."""

    def __init__(self, netns: str | None = None) -> None:
        if not HAS_PYROUTE2:
            raise RuntimeError(f"pyroute2 is required: {PYROUTE2_IMPORT_ERROR}")
        self._classes = {g: _msg_class(f"ethtool_{g}_msg", spec[0]) for g, spec in _SCALAR_GROUPS.items()}
        self._classes["features"] = _msg_class("ethtool_features_msg", FEATURES_ATTRS)
        self._classes["private_flags"] = _msg_class("ethtool_privflags_msg", PRIVFLAGS_ATTRS)
        kwargs = {"netns": netns} if netns else {}
        self._sock = GenericNetlinkSocket(**kwargs)
        try:
            self._sock.bind(ETHTOOL_GENL_NAME, self._classes["ring"])
        except NetlinkError as exc:
            self._sock.close()
            raise RuntimeError(
                "the kernel has no ethtool generic netlink family (CONFIG_ETHTOOL_NETLINK): " + str(exc)
            ) from exc
        self._prid = self._sock.prid

    def close(self) -> None:
        self._sock.close()

    def __enter__(self) -> EthtoolNetlink:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- transport -------------------------------------------------------
    def _request(self, group: str, cmd: int, ifname: str, attrs: list, op: str) -> Any:
        cls = self._classes[group]
        # One genl family id, several message layouts: pick the parser per request.
        self._sock.asyncore.marshal.msg_map[self._prid] = cls
        msg = cls()
        msg["cmd"] = cmd
        msg["version"] = ETHTOOL_GENL_VERSION
        msg["attrs"] = [["header", {"attrs": [["ETHTOOL_A_HEADER_DEV_NAME", ifname]]}], *attrs]
        flags = NLM_F_REQUEST | (NLM_F_ACK if op == "set" else 0)
        try:
            reply = self._sock.nlm_request(msg, msg_type=self._prid, msg_flags=flags)
        except NetlinkError as exc:
            detail = exc.args[1] if len(exc.args) > 1 and exc.args[1] else str(exc)
            raise EthtoolError(ifname, group, exc.code, detail, op) from exc
        return reply[0] if reply else None

    # -- scalar groups ------------------------------------------------------
    def get(self, group: str, ifname: str) -> dict[str, int | bool]:
        """Read ring/channels/coalesce/pause as {key: value} (only attributes the kernel reported)."""
        if group in ("features", "private_flags"):
            raise ValueError(f"use get_{group}() for {group}")
        table, get_cmd, _dummy = _SCALAR_GROUPS[group]
        reply = self._request(group, get_cmd, ifname, [], "get")
        out: dict[str, int | bool] = {}
        names = {n for n, _dummy in table[2:]}
        bools = BOOL_KEYS.get(group, frozenset())
        for attr in reply["attrs"]:
            name, value = attr[0], attr[1]
            if name in names:
                out[name] = bool(value) if name in bools else int(value)
        return out

    def set(self, group: str, ifname: str, values: dict[str, int | bool]) -> None:
        """Write only the given keys of ring/channels/coalesce/pause."""
        table, _dummy, set_cmd = _SCALAR_GROUPS[group]
        allowed = set(SETTABLE[group])
        attrs = []
        for key, value in values.items():
            if key not in allowed:
                raise ValueError(f"{group} setting {key!r} cannot be written")
            attrs.append([key, int(value)])
        if attrs:
            self._request(group, set_cmd, ifname, attrs, "set")

    # -- features -------------------------------------------------------
    def get_features(self, ifname: str) -> dict[str, dict[str, bool]]:
        """Return {'hw': {...}, 'wanted': {...}, 'active': {...}, 'nochange': {...}}.

        ``hw`` maps every feature name the kernel knows (the mask) to its
        changeable bit; the other three are {name: bool} over the same names.
        """
        reply = self._request("features", MSG_FEATURES_GET, ifname, [], "get")
        hw, _dummy = _bitset_to_dict(reply.get_attr("hw"))
        out = {"hw": hw}
        for key in ("wanted", "active", "nochange"):
            bits, nomask = _bitset_to_dict(reply.get_attr(key))
            out[key] = {name: bits.get(name, False) for name in hw} if nomask else bits
        return out

    def set_features(self, ifname: str, wanted: dict[str, bool]) -> None:
        if wanted:
            self._request("features", MSG_FEATURES_SET, ifname, [["wanted", _bitset_request(wanted)]], "set")

    # -- private flags --------------------------------------------------
    def get_private_flags(self, ifname: str) -> dict[str, bool]:
        reply = self._request("private_flags", MSG_PRIVFLAGS_GET, ifname, [], "get")
        flags, _dummy = _bitset_to_dict(reply.get_attr("flags"))
        return flags

    def set_private_flags(self, ifname: str, flags: dict[str, bool]) -> None:
        if flags:
            self._request("private_flags", MSG_PRIVFLAGS_SET, ifname, [["flags", _bitset_request(flags)]], "set")


def read_nic_raw(eth: EthtoolNetlink, ifname: str) -> tuple[dict[str, Any], dict[str, str]]:
    """Read every group; return (state, unsupported) where unsupported maps group -> reason.

    ``state`` holds the raw kernel view: scalar groups with maxima,
    ``features`` as returned by :meth:`EthtoolNetlink.get_features`,
    ``private_flags`` as {name: bool}.  A missing device raises EthtoolError.
    """
    state: dict[str, Any] = {}
    unsupported: dict[str, str] = {}
    readers = {
        "ring": lambda: eth.get("ring", ifname),
        "channels": lambda: eth.get("channels", ifname),
        "coalesce": lambda: eth.get("coalesce", ifname),
        "pause": lambda: eth.get("pause", ifname),
        "features": lambda: eth.get_features(ifname),
        "private_flags": lambda: eth.get_private_flags(ifname),
    }
    for group, reader in readers.items():
        try:
            value = reader()
        except EthtoolError as exc:
            if exc.no_device:
                raise
            unsupported[group] = exc.detail
            continue
        if group == "private_flags" and not value:
            unsupported[group] = "the device has no private flags"
            continue
        if group == "channels" and not any(value.get(k) for k in ("rx_max", "tx_max", "other_max", "combined_max")):
            unsupported[group] = "the device reports no channel maxima"
            continue
        state[group] = value
    return state, unsupported


def public_view(raw: dict[str, Any]) -> dict[str, Any]:
    """Reduce a raw read to the read-back shape of the environment fingerprint.

    ring/channels: current values plus ``max`` (a dict), coalesce/pause as
    read, features as {name: active bool} (named features only),
    private_flags as {name: bool}.  Unsupported groups are absent.
    """
    view: dict[str, Any] = {}
    for group in ("coalesce", "pause"):
        if group in raw:
            view[group] = dict(raw[group])
    for group in ("ring", "channels"):
        if group in raw:
            maxima = MAXIMA[group]
            cur = {k: v for k, v in raw[group].items() if k not in maxima.values()}
            cur["max"] = {k: raw[group][m] for k, m in maxima.items() if m in raw[group]}
            view[group] = cur
    if "features" in raw:
        view["features"] = dict(sorted(raw["features"]["active"].items()))
    if "private_flags" in raw:
        view["private_flags"] = dict(raw["private_flags"])
    if "mtu" in raw:
        view["mtu"] = raw["mtu"]
    return view


def read_nic_state(ifname: str, netns: str | None = None) -> dict[str, Any]:
    """Read-back of one interface for verify steps and env_facts (ethtool part of the fingerprint).

    Returns {"coalesce", "ring", "channels", "pause", "features", "private_flags"} with the
    groups the device does not support omitted (never invented).
    """
    with EthtoolNetlink(netns) as eth:
        raw, _dummy = read_nic_raw(eth, ifname)
    return public_view(raw)


# -- rtnetlink side: existence and MTU ---------------------------------------

def read_link(ifname: str, netns: str | None = None) -> dict[str, int] | None:
    """{"index", "mtu", "min_mtu", "max_mtu"} of an interface, or None when it does not exist."""
    if not HAS_PYROUTE2:
        raise RuntimeError(f"pyroute2 is required: {PYROUTE2_IMPORT_ERROR}")
    from pyroute2 import IPRoute, NetNS

    with NetNS(netns) if netns else IPRoute() as ipr:
        links = ipr.link_lookup(ifname=ifname)
        if not links:
            return None
        link = ipr.get_links(links[0])[0]
        out = {"index": links[0], "mtu": link.get_attr("IFLA_MTU")}
        for attr, key in (("IFLA_MIN_MTU", "min_mtu"), ("IFLA_MAX_MTU", "max_mtu")):
            value = link.get_attr(attr)
            if value is not None:
                out[key] = value
        return out


def set_mtu(ifname: str, mtu: int, netns: str | None = None) -> None:
    from pyroute2 import IPRoute, NetNS

    with NetNS(netns) if netns else IPRoute() as ipr:
        ipr.link("set", index=ipr.link_lookup(ifname=ifname)[0], mtu=mtu)

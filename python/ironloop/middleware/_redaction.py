"""Detecting and replacing sensitive values in text: what ``PIIMiddleware`` and
``ShellToolMiddleware``'s output redaction share, with LangChain 1.5's names,
strategies and replacement formats. The built-in detectors run in Rust
(``src/pii.rs``); a rule may bring its own regex or function instead."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from typing_extensions import TypedDict

from ironloop._ironloop import _pii_detect

__all__ = [
    "BUILTIN_DETECTORS",
    "Detector",
    "PIIDetectionError",
    "PIIMatch",
    "RedactionRule",
    "RedactionStrategy",
    "ResolvedRedactionRule",
    "apply_strategy",
    "detect_credit_card",
    "detect_email",
    "detect_ip",
    "detect_mac_address",
    "detect_url",
    "resolve_detector",
]

RedactionStrategy = Literal["block", "redact", "mask", "hash"]


class PIIMatch(TypedDict):
    """One detected value: its type, text and character span ``[start, end)``."""

    type: str
    value: str
    start: int
    end: int


class PIIDetectionError(Exception):
    """Raised by the ``block`` strategy when a value of ``pii_type`` is found."""

    def __init__(self, pii_type: str, matches: Sequence[PIIMatch]) -> None:
        self.pii_type = pii_type
        self.matches = list(matches)
        super().__init__(f"Detected {len(matches)} instance(s) of {pii_type} in text content")


Detector = Callable[[str], list[PIIMatch]]


def _builtin(kind: str) -> Detector:
    def detect(content: str) -> list[PIIMatch]:
        return [
            PIIMatch(type=kind, value=value, start=start, end=end)
            for value, start, end in _pii_detect(kind, content)
        ]

    detect.__name__ = f"detect_{kind}"
    detect.__doc__ = f"The {kind.replace('_', ' ')} values in ``content`` (detected in Rust)."
    return detect


detect_email = _builtin("email")
detect_credit_card = _builtin("credit_card")
detect_ip = _builtin("ip")
detect_mac_address = _builtin("mac_address")
detect_url = _builtin("url")

BUILTIN_DETECTORS: dict[str, Detector] = {
    "email": detect_email,
    "credit_card": detect_credit_card,
    "ip": detect_ip,
    "mac_address": detect_mac_address,
    "url": detect_url,
}


def _mask(match: PIIMatch) -> str:
    value, kind = match["value"], match["type"]
    if kind == "email":
        local, at, domain = value.partition("@")
        if not at or "@" in domain:
            return "****"
        parts = domain.split(".")
        return f"{local}@****.{parts[-1]}" if len(parts) > 1 else f"{local}@****"
    if kind == "credit_card":
        last4 = "".join(c for c in value if c.isdigit())[-4:]
        sep = "-" if "-" in value else " " if " " in value else ""
        return f"****{sep}****{sep}****{sep}{last4}" if sep else f"************{last4}"
    if kind == "ip":
        octets = value.split(".")
        return f"*.*.*.{octets[-1]}" if len(octets) == 4 else "****"
    if kind == "mac_address":
        sep = ":" if ":" in value else "-"
        return sep.join(["**"] * 5) + sep + value[-2:]
    if kind == "url":
        return "[MASKED_URL]"
    return f"****{value[-4:]}" if len(value) > 4 else "****"


def _replacement(match: PIIMatch, strategy: str) -> str:
    if strategy == "redact":
        return f"[REDACTED_{match['type'].upper()}]"
    if strategy == "mask":
        return _mask(match)
    digest = hashlib.sha256(match["value"].encode()).hexdigest()[:8]
    return f"<{match['type']}_hash:{digest}>"


def apply_strategy(content: str, matches: list[PIIMatch], strategy: RedactionStrategy) -> str:
    """``content`` with each match replaced as ``strategy`` says (``block`` raises
    ``PIIDetectionError`` instead)."""
    if not matches:
        return content
    if strategy == "block":
        raise PIIDetectionError(matches[0]["type"], matches)
    if strategy not in ("redact", "mask", "hash"):
        raise ValueError(
            f"Unknown redaction strategy: {strategy!r}; use 'block', 'redact', 'mask' or 'hash'"
        )
    result = content
    for m in sorted(matches, key=lambda m: m["start"], reverse=True):
        result = result[: m["start"]] + _replacement(m, strategy) + result[m["end"] :]
    return result


def resolve_detector(pii_type: str, detector: Detector | str | None) -> Detector:
    """The detector for a rule: the built-in one for ``pii_type``, a compiled regex, or
    ``detector`` itself with its matches normalised (a ``text`` key read as ``value``,
    a missing ``type`` filled in)."""
    if detector is None:
        if pii_type not in BUILTIN_DETECTORS:
            raise ValueError(
                f"Unknown PII type: {pii_type}. Must be one of "
                f"{list(BUILTIN_DETECTORS)} or provide a custom detector."
            )
        return BUILTIN_DETECTORS[pii_type]
    if isinstance(detector, str):
        pattern = re.compile(detector)

        def regex_detector(content: str) -> list[PIIMatch]:
            return [
                PIIMatch(type=pii_type, value=m.group(), start=m.start(), end=m.end())
                for m in pattern.finditer(content)
            ]

        return regex_detector
    custom: Callable[[str], Any] = detector

    def normalising_detector(content: str) -> list[PIIMatch]:
        return [
            PIIMatch(
                type=m.get("type", pii_type),
                value=m.get("value", m.get("text", "")),
                start=m["start"],
                end=m["end"],
            )
            for m in custom(content)
        ]

    return normalising_detector


@dataclass(frozen=True)
class RedactionRule:
    """How to handle one type of sensitive value: its detector and strategy."""

    pii_type: str
    strategy: RedactionStrategy = "redact"
    detector: Detector | str | None = None

    def resolve(self) -> ResolvedRedactionRule:
        return ResolvedRedactionRule(
            pii_type=self.pii_type,
            strategy=self.strategy,
            detector=resolve_detector(self.pii_type, self.detector),
        )


@dataclass(frozen=True)
class ResolvedRedactionRule:
    """A rule with its detector resolved, ready to apply."""

    pii_type: str
    strategy: RedactionStrategy
    detector: Detector

    def apply(self, content: str) -> tuple[str, list[PIIMatch]]:
        """``content`` with the rule applied, and the matches found."""
        matches = self.detector(content)
        if not matches:
            return content, []
        return apply_strategy(content, matches, self.strategy), matches

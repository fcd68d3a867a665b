"""A service spec: how to start a real data service's servers and clients,
how to know a server is ready, how to read a client's rate, and which
rooftop metric it is compared with (docs/services.md, field by field).

A spec is a TOML file (or a preset's table, rooftop.service.presets),
read into a ServiceSpec by `parse`; every problem is a ConfigError naming
the key and the file. `resolved` gives every field, defaults included, as
stored with the points (points.save_spec).
"""

from __future__ import annotations

import re
import shlex
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from rooftop import units
from rooftop.keys import ConfigError, short
from rooftop.metrics import METRICS

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10
    import tomli as tomllib

#: Placeholders each template may use.
SERVER_FIELDS = ("address", "port", "rank", "node", "cores", "dir")
CLIENT_FIELDS = ("server_address", "server_port", "duration", "rank", "count")
READY_FIELDS = ("address", "port", "rank", "node", "dir")

_PLACEHOLDER = re.compile(r"\{(\w+)\}")
_NAME = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,62}$")


#: server.base_port when a spec gives none.
BASE_PORT = 17000


@dataclass(frozen=True)
class Server:
    command: str
    #: Server process of rank r serves on base_port + r.
    base_port: int = BASE_PORT
    #: Run once per server after the samples (before SIGTERM); optional.
    stop: str = ""
    env: dict[str, str] = field(default_factory=dict)
    #: Globs under each server's {dir} copied to the run's folder as evidence.
    keep: tuple[str, ...] = ()


@dataclass(frozen=True)
class Ready:
    """Exactly one of tcp (the server's port accepts), file (a path
    appears) or command (a command exits 0), within timeout seconds."""

    tcp: bool = False
    file: str = ""
    command: str = ""
    timeout: float = 30.0

    def rule(self) -> str:
        """The rule in the spec's own words (error messages name it)."""
        if self.tcp:
            return "ready.tcp (the server's port accepting connections)"
        if self.file:
            return f"ready.file ({self.file!r} appearing)"
        return f"ready.command ({self.command!r} succeeding)"


@dataclass(frozen=True)
class Client:
    command: str
    #: The client runs until stopped: the wrapper sends it SIGINT after {duration} s.
    stop_after_duration: bool = False
    env: dict[str, str] = field(default_factory=dict)
    #: Seconds every client has to reach the barrier before the sample is invalid.
    start_timeout: float = 30.0
    #: Seconds after {duration} a client may take to end before it is stopped (sample failed).
    end_grace: float = 15.0


@dataclass(frozen=True)
class Rate:
    """How a client's rate is read from its output: regex (its named group
    'rate', else its first group, on the last matching line) or json (a
    dotted path into the last JSON document of the output); progress: a
    regex whose group is the rate over the interval since the previous
    progress line (then only the time all clients shared counts)."""

    unit: str
    regex: str = ""
    json: str = ""
    progress: str = ""


@dataclass(frozen=True)
class ServiceSpec:
    name: str
    metric: str
    server: Server
    ready: Ready
    client: Client
    rate: Rate
    #: What one operation is: "request", or bytes per request ("1MiB", 4096).
    operation: str = "request"
    description: str = ""
    #: Where it was read from (messages name it).
    source: str = ""

    @property
    def unit(self) -> str:
        """The compared metric's unit (points are stored in it)."""
        return METRICS[self.metric].unit

    @property
    def op_bytes(self) -> int | None:
        return None if self.operation == "request" else units.parse_size(self.operation, "operation")

    def to_metric(self, value: float) -> float:
        """A client's rate in rate.unit -> the metric's unit."""
        base, factor = units.parse(self.rate.unit)
        v = value * factor
        if base == self.unit:
            return v
        b = self.op_bytes
        assert b is not None  # parse() refused the spec otherwise
        return v * b if base == "ops/s" else v / b

    def resolved(self) -> dict:
        """Every field, defaults included (stored with the points)."""
        d = asdict(self)
        d["server"]["keep"] = list(self.server.keep)
        d["unit"] = self.unit
        return d


def _err(src: str, key: str, why: str) -> ConfigError:
    return ConfigError(f"{src}: {key}: {why}")


def _table(data: dict, key: str, src: str, required: bool = True) -> dict:
    v = data.get(key)
    if v is None and not required:
        return {}
    if not isinstance(v, dict):
        raise _err(src, key, "missing table" if v is None else f"must be a table, not {short(v)}")
    return v


def _no_extra(t: dict, allowed, prefix: str, src: str) -> None:
    for k in t:
        if k not in allowed:
            raise _err(src, f"{prefix}{k}", f"unknown key (known: {', '.join(allowed)})")


def _str(t: dict, key: str, prefix: str, src: str, default: str | None = None) -> str:
    v = t.get(key, default)
    if v is None:
        raise _err(src, prefix + key, "missing")
    if not isinstance(v, str):
        raise _err(src, prefix + key, f"must be a string, not {short(v)}")
    return v


def _num(t: dict, key: str, prefix: str, src: str, default: float, lo: float = 0.0) -> float:
    v = t.get(key, default)
    if isinstance(v, bool) or not isinstance(v, int | float) or not v > lo or v > 86400:
        raise _err(src, prefix + key, f"must be a number of seconds above {lo:g}, not {short(v)}")
    return float(v)


def _bool(t: dict, key: str, prefix: str, src: str) -> bool:
    v = t.get(key, False)
    if not isinstance(v, bool):
        raise _err(src, prefix + key, f"must be true or false, not {short(v)}")
    return v


def _env(t: dict, prefix: str, src: str) -> dict[str, str]:
    v = t.get("env", {})
    if not isinstance(v, dict) or not all(isinstance(x, str) for x in v.values()):
        raise _err(src, prefix + "env", f"must be a table of strings, not {short(v)}")
    return dict(v)


def _template(text: str, key: str, allowed: tuple[str, ...], src: str, need: tuple[str, ...] = ()) -> str:
    if not text.strip():
        raise _err(src, key, "must not be empty")
    for name in _PLACEHOLDER.findall(text):
        if name not in allowed:
            raise _err(src, key, f"unknown placeholder {{{name}}} (known: {', '.join('{' + a + '}' for a in allowed)})")
    for name in need:
        if "{" + name + "}" not in text:
            raise _err(src, key, f"must use {{{name}}}")
    try:
        shlex.split(text)
    except ValueError as e:
        raise _err(src, key, f"not a command line ({e})") from None
    return text


def _regex(text: str, key: str, src: str, group: bool = True) -> str:
    try:
        rx = re.compile(text)
    except re.error as e:
        raise _err(src, key, f"not a regular expression ({e})") from None
    if group and rx.groups < 1:
        raise _err(src, key, "needs a group around the number (named 'rate', or the first)")
    return text


def parse(data: Any, src: str) -> ServiceSpec:
    """A spec from its table (TOML's); src names the file in messages. Its
    tables are read one by one (_server, _ready, _client, _rate)."""
    if not isinstance(data, dict):
        raise ConfigError(f"{src}: a service spec is a table, not {short(data)}")
    _no_extra(data, ("name", "metric", "operation", "description", "server", "ready", "client", "rate"), "", src)
    name = _str(data, "name", "", src)
    if not _NAME.match(name):
        raise _err(src, "name", f"{short(name)}: lowercase letters, digits, '-', '_', '.' (it names a folder)")
    metric = _str(data, "metric", "", src)
    if metric not in METRICS:
        raise _err(src, "metric", f"{short(metric)} is not one of {', '.join(METRICS)}")
    op = data.get("operation", "request")
    if isinstance(op, int) and not isinstance(op, bool):
        op = str(op)
    if not isinstance(op, str):
        raise _err(src, "operation", f"'request' or bytes per request ('1MiB', 4096), not {short(op)}")
    if op != "request":
        units.parse_size(op, f"{src}: operation")
    server, ready, client = _server(data, src), _ready(data, src), _client(data, src)  # (errors in table order)
    rate = _rate(data, metric, op, client, src)
    desc = _str(data, "description", "", src, "")
    return ServiceSpec(name, metric, server, ready, client, rate, op, desc, src)


def _server(data: dict, src: str) -> Server:
    s = _table(data, "server", src)
    _no_extra(s, ("command", "base_port", "stop", "env", "keep"), "server.", src)
    port = s.get("base_port", BASE_PORT)  # a spec's table, not a config section
    if isinstance(port, bool) or not isinstance(port, int) or not 1024 <= port <= 65000:
        raise _err(src, "server.base_port", f"a TCP port in 1024..65000, not {short(port)}")
    keep = s.get("keep", [])
    if not isinstance(keep, list) or not all(isinstance(k, str) and k and not k.startswith("/") for k in keep):
        raise _err(src, "server.keep", f"a list of globs relative to the server's {{dir}}, not {short(keep)}")
    return Server(
        _template(_str(s, "command", "server.", src), "server.command", SERVER_FIELDS, src),
        port,
        _template(s["stop"], "server.stop", SERVER_FIELDS, src) if s.get("stop") else "",
        _env(s, "server.", src),
        tuple(keep),
    )


def _ready(data: dict, src: str) -> Ready:
    r = _table(data, "ready", src)
    _no_extra(r, ("tcp", "file", "command", "timeout"), "ready.", src)
    tcp = _bool(r, "tcp", "ready.", src)
    file = _str(r, "file", "ready.", src, "")
    cmd = _str(r, "command", "ready.", src, "")
    if sum(map(bool, (tcp, file, cmd))) != 1:
        raise _err(src, "ready", "give exactly one of tcp = true, file = PATH, command = COMMAND")
    if file:
        _template(file, "ready.file", READY_FIELDS, src)
    if cmd:
        _template(cmd, "ready.command", READY_FIELDS, src)
    return Ready(tcp, file, cmd, _num(r, "timeout", "ready.", src, 30.0))


def _client(data: dict, src: str) -> Client:
    c = _table(data, "client", src)
    _no_extra(c, ("command", "stop_after_duration", "env", "start_timeout", "end_grace"), "client.", src)
    return Client(
        _template(
            _str(c, "command", "client.", src), "client.command", CLIENT_FIELDS, src, ("server_address", "server_port")
        ),
        _bool(c, "stop_after_duration", "client.", src),
        _env(c, "client.", src),
        _num(c, "start_timeout", "client.", src, 30.0),
        _num(c, "end_grace", "client.", src, 15.0),
    )


def _rate(data: dict, metric: str, op: str, client: Client, src: str) -> Rate:
    t = _table(data, "rate", src)
    _no_extra(t, ("unit", "regex", "json", "progress"), "rate.", src)
    unit = _str(t, "unit", "rate.", src)
    try:
        base, _ = units.parse(unit)
    except KeyError:
        raise _err(src, "rate.unit", f"{short(unit)} is not one of {', '.join(units.PARAM_UNITS)}") from None
    if base != METRICS[metric].unit and op == "request":
        raise _err(
            src,
            "rate.unit",
            f"{unit} cannot be compared with {metric} ({METRICS[metric].unit}) unless operation gives "
            "the bytes per request",
        )
    regex = _regex(_str(t, "regex", "rate.", src, ""), "rate.regex", src) if t.get("regex") else ""
    jpath = _str(t, "json", "rate.", src, "")
    progress = _regex(_str(t, "progress", "rate.", src, ""), "rate.progress", src) if t.get("progress") else ""
    if bool(regex) + bool(jpath) + bool(progress) != 1:
        raise _err(src, "rate", "give exactly one of regex, json (the client's final rate) or progress")
    if client.stop_after_duration and not progress:
        raise _err(
            src, "client.stop_after_duration", "a client stopped by a signal prints no final rate: give rate.progress"
        )
    return Rate(unit, regex, jpath, progress)


def from_resolved(data: dict, src: str) -> ServiceSpec:
    """A spec from its resolved form (ServiceSpec.resolved: stored with its
    points, and as spec.json in its folder); ConfigError when it is not one."""
    if not isinstance(data, dict):
        raise ConfigError(f"{src}: a resolved service spec is a table, not {short(data)}")
    return parse({k: v for k, v in data.items() if k not in ("unit", "source")}, src)


def load(path: str | Path) -> ServiceSpec:
    """A spec file (TOML)."""
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as e:
        raise ConfigError(f"{p}: cannot read the service spec ({e.strerror})") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{p}: not valid TOML ({e})") from None
    return parse(data, str(p))


def fill(template: str, values: dict[str, Any]) -> str:
    """Replaces the {name} placeholders given (others are left for later)."""
    return _PLACEHOLDER.sub(lambda m: str(values[m.group(1)]) if m.group(1) in values else m.group(0), template)


def command(template: str, values: dict[str, Any]) -> list[str]:
    """A command template's argv: split as a shell would first, then the
    {name} placeholders given replaced inside each argument, so a value
    with spaces or quotes (a results folder's path in {dir}) stays one
    argument. Placeholders not given are left for later (`partly`)."""
    return [fill(arg, values) for arg in shlex.split(template)]


def partly(template: str, values: dict[str, Any]) -> str:
    """The template with the placeholders given filled, as a template
    again (each argument quoted back): what a process filling the others
    (rooftop.service.barrier) then splits with `command`."""
    return shlex.join(command(template, values))


def seconds_text(s: float) -> str:
    """{duration} as clients read it: '2' for 2.0, '2.5' otherwise."""
    return str(int(s)) if float(s).is_integer() else f"{s:g}"

"""A small exception hierarchy. The command line turns these into one-line errors."""


def first_line(exc: BaseException) -> str:
    """The first line of an error's message (a driver's own exception, if it wraps one)."""
    text = str(getattr(exc, "orig", None) or exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def one_line(text: str, limit: int = 300) -> str:
    """``text`` from a user's data as it may appear in a one-line message: control characters
    (line breaks among them) escaped, cut to ``limit`` characters."""
    out = "".join(c if c.isprintable() else repr(c)[1:-1] for c in str(text))
    return out if len(out) <= limit else out[: limit - 3] + "..."


class FlywheelError(Exception):
    """Base of every error a user can cause or fix."""


class ConfigError(FlywheelError):
    """A setting, a config file or an option is wrong."""


class StateError(FlywheelError):
    """The state database cannot be reached or used."""


class StateLost(StateError):
    """The state database went away midway (a cut connection, a restart): worth trying again."""


class StorageError(FlywheelError):
    """The data directory or a shard cannot be used."""


class InputError(FlywheelError):
    """A file or value given by the user is malformed."""


class EndpointError(FlywheelError):
    """A model endpoint is unreachable or refuses us."""


class EndpointGaveUp(EndpointError):
    """Calls still failed after their retries: the episodes they cut off are not data, so the unit
    holding them is not committed (its replies so far stay journaled for the rerun)."""


class OrchestratorError(FlywheelError):
    """Prefect (its server, or the temporary one a round starts) or the Dask cluster cannot be used."""

"""Before relevancy writes to an MLflow tracking store it opens itself (a database URI such as
``sqlite:///mlflow.db``, or a file store), it checks that the store is one this MLflow client
can use *as it is*.

MLflow's client migrates a database store made by an older MLflow to its own schema when it
opens it (its ``SqlAlchemyStore`` runs Alembic's upgrade when a table it expects is missing),
and the older MLflow then refuses to open its own store. So the store's schema revision is read
first, read-only and with SQLAlchemy alone, and compared with the newest revision of the
installed MLflow's migrations; when they differ nothing is written, and one line says which
versions and what to do. A tracking server (``http://...``) keeps its own store: the client
only talks to it, so it needs no check.
"""

from __future__ import annotations

import importlib.metadata as metadata
from pathlib import Path
from urllib.parse import unquote, urlsplit

from relevancy.errors import InputError

__all__ = ["check_store", "client_version", "schema_head", "KNOWN_HEADS"]

#: the newest schema revision of some MLflow releases, to name the release a store was made by
KNOWN_HEADS = {"dc11669786a5": "3.17", "f4a9b2c7d1e6": "3.18"}
#: database URIs MLflow opens with SQLAlchemy (its ``SqlAlchemyStore``)
DATABASES = ("sqlite", "postgresql", "mysql", "mssql")
REMOTE = ("http", "https", "databricks", "databricks-uc", "uc")
ADVICE = (
    "log through the team's tracking server instead (mlflow server --backend-store-uri "
    "{uri}, then --to-mlflow http://HOST:5000), or install the MLflow that made the store "
    "(pip install 'mlflow-skinny=={version}.*')"
)


def client_version() -> str:
    """The installed MLflow client's version (``mlflow`` or ``mlflow-skinny``)."""
    for name in ("mlflow", "mlflow-skinny"):
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return "unknown"


def schema_head() -> tuple[str, set[str]]:
    """The newest schema revision of the installed MLflow's migrations, and every revision it
    knows (a store at one of those, other than the newest, was made by an older MLflow)."""
    import mlflow  # lazy: the mlflow extra
    from alembic.script import ScriptDirectory

    folder = Path(mlflow.__file__).parent / "store" / "db_migrations"
    script = ScriptDirectory(str(folder))
    heads = script.get_heads()
    known = {rev.revision for rev in script.walk_revisions()}
    return (heads[0] if len(heads) == 1 else ",".join(sorted(heads))), known


def check_store(uri: str, *, must_exist: bool) -> None:
    """Raise a one-line :class:`InputError` unless the store at ``uri`` can be written as it is:
    a database at this client's schema revision, a file store MLflow is allowed to use, or a
    tracking server. ``must_exist``: a store that is not there is an error (feedback needs the
    traces' store); otherwise MLflow may make a new one (a run's)."""
    scheme = urlsplit(uri).scheme.lower()
    kind = scheme.split("+")[0]
    if kind in REMOTE or (scheme and kind not in DATABASES and kind != "file"):
        return  # a tracking server or a plugin's store: it keeps its own schema
    if kind in DATABASES:
        _check_database(uri, kind, must_exist=must_exist)
    else:
        _check_file_store(uri, must_exist=must_exist)


def _sqlite_path(uri: str) -> Path | None:
    """The file of a ``sqlite:///PATH`` URI (None for an in-memory database)."""
    rest = uri.split(":", 1)[1]
    if rest in ("", "//", "///", "///:memory:") or ":memory:" in rest:
        return None
    path = rest[3:] if rest.startswith("///") else rest.lstrip("/")
    return Path(unquote(path.split("?", 1)[0]))


def _check_database(uri: str, kind: str, *, must_exist: bool) -> None:
    import sqlalchemy  # lazy: the mlflow extra

    engine_uri = uri
    if kind == "sqlite":
        path = _sqlite_path(uri)
        if path is None:
            return
        if not path.is_file():
            if must_exist:
                raise InputError(
                    f"no MLflow store at {uri}: {path} does not exist (check the "
                    "tracking URI; the traces' store is needed)"
                )
            return
        engine_uri = f"sqlite:///file:{path.resolve()}?mode=ro&uri=true"  # read-only
    engine = sqlalchemy.create_engine(engine_uri)
    try:
        with engine.connect() as conn:
            tables = set(sqlalchemy.inspect(conn).get_table_names())
            if not tables:
                if must_exist:
                    raise InputError(f"the MLflow store at {uri} is empty: it holds no traces")
                return  # an empty database: MLflow makes its tables, nobody's data changes
            if "alembic_version" not in tables:
                raise InputError(
                    f"{uri} is not an MLflow store (it has no alembic_version "
                    "table): nothing was written to it"
                )
            rows = conn.execute(sqlalchemy.text("SELECT version_num FROM alembic_version"))
            found = ",".join(sorted(str(r[0]) for r in rows))
    except InputError:
        raise
    except Exception as exc:  # cannot connect, no permission, not a database...
        text = str(exc).splitlines()[0][:200] if str(exc) else ""
        raise InputError(
            f"cannot read the MLflow store at {uri} ({type(exc).__name__}: {text})"
        ) from None
    finally:
        engine.dispose()
    head, known = schema_head()
    if found == head:
        return
    ours = client_version()
    theirs = KNOWN_HEADS.get(found)
    if found in known:
        made_by = f"an older MLflow ({theirs})" if theirs else "an older MLflow"
        effect = (
            f"this MLflow ({ours}) would migrate it to {head}, and the MLflow that made "
            "it could no longer open it"
        )
    else:
        made_by = f"a newer MLflow ({theirs})" if theirs else "a newer MLflow"
        effect = f"this MLflow ({ours}, schema {head}) does not know that schema"
    advice = ADVICE.format(uri=uri, version=theirs or "X.Y")
    raise InputError(
        f"the MLflow store {uri} has schema {found}, made by {made_by}: {effect}; "
        f"nothing was written to it: {advice}"
    )


def _check_file_store(uri: str, *, must_exist: bool) -> None:
    path = Path(unquote(urlsplit(uri).path) if uri.lower().startswith("file:") else uri)
    if must_exist and not path.is_dir():
        raise InputError(
            f"no MLflow store at {uri}: {path} is not a folder (check the tracking "
            "URI; the traces' store is needed)"
        )
    try:  # lazy: the mlflow extra; MLflow 3.7 and later refuse a file store without it
        from mlflow.environment_variables import MLFLOW_ALLOW_FILE_STORE
    except ImportError:
        return
    if not MLFLOW_ALLOW_FILE_STORE.get():
        raise InputError(
            f"MLflow {client_version()} writes to a file store ({uri}) only with "
            "MLFLOW_ALLOW_FILE_STORE=true (file stores are in maintenance mode): nothing was "
            "written; set it, or log through a tracking server or a sqlite:/// store"
        )

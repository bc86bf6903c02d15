"""The data directory: ``OCC_DATA_DIR``, by default ``.occ/`` in the project folder.

It holds one installation's embedded state: the SQLite database, the filesystem broker's
folders, the generated keys (Django's signing key and the Fernet key that encrypts Secrets),
the bootstrap files and the local driver's Agent folders.

It is created in one place only, ``python -m project.data_dir`` (``make init``, which ``make run``
runs first). Every other process only reads it: the settings refuse to load, saying what to
do, when the directory or a key it needs is missing, because creating either on the side
starts a second installation without a word (an empty database, or a new encryption key that
cannot decrypt the Secrets already stored). ``python -m project.data_dir`` itself generates keys
for a new installation only: it never puts a new encryption key next to an existing one's
database or bootstrap key.

Importable without Django settings: project/settings.py uses it.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import environ
from cryptography.fernet import Fernet
from django.core.management.utils import get_random_secret_key

PROJECT_DIR = Path(__file__).resolve().parent.parent
DJANGO_KEY_FILE = "django-secret-key"
ENCRYPTION_KEY_FILE = "secret-encryption.key"
# The environment variable that, when set, replaces each generated key file.
KEY_VARIABLES = {DJANGO_KEY_FILE: "OCC_DJANGO_SECRET_KEY", ENCRYPTION_KEY_FILE: "OCC_SECRET_KEYS"}
KEY_FACTORIES = {DJANGO_KEY_FILE: get_random_secret_key, ENCRYPTION_KEY_FILE: lambda: Fernet.generate_key().decode()}
BROKER_FOLDERS = ("broker/out", "broker/processed", "broker/control")
STATIC_FOLDER = "staticfiles"
# What an installation leaves here; a directory holding one of these is not new.
INSTALLATION_FILES = ("occ.sqlite3", "bootstrap-admin-key.json")
INIT_COMMAND = "make init"


class DataDirError(Exception):
    """The data directory cannot be used or created as it is; the message says what to do."""


@dataclass(frozen=True)
class DataDir:
    path: Path
    # The generated key files this configuration needs (those its environment does not replace).
    keys: tuple[str, ...] = (DJANGO_KEY_FILE, ENCRYPTION_KEY_FILE)
    # OCC_DATA_DIR was not set: the path is the project's default.
    default: bool = False

    def problem(self) -> str | None:
        """None when the directory and its keys are there, else what is wrong and what to do."""
        if not self.path.exists():
            if self.default:
                return (f"OCC_DATA_DIR is not set and the default data directory {self.path} does not exist. "
                        "If OCC runs with another data directory (`OCC_DATA_DIR=... make run`), set OCC_DATA_DIR "
                        f"to that folder in this shell too; to create a new installation here, run `{INIT_COMMAND}`.")
            return (f"OCC_DATA_DIR is {self.path}, which does not exist. Set it to the folder `make run` uses, or "
                    f"run `{INIT_COMMAND}` with this OCC_DATA_DIR to create a new installation there.")
        if not self.path.is_dir():
            return f"OCC_DATA_DIR is {self.path}, which is not a directory."
        missing = [name for name in self.keys if not (self.path / name).is_file()]
        if missing:
            return self._missing_keys(missing)
        return None

    def _missing_keys(self, missing: list[str]) -> str:
        names = " and ".join(missing) + (" are" if len(missing) > 1 else " is")
        variables = " and ".join(KEY_VARIABLES[name] for name in missing)
        if self.holds_installation():
            return (f"{names} missing from the data directory {self.path}, which holds an installation: a new key "
                    "would not match what it stored (Secrets are encrypted with it). Restore the file from a "
                    f"backup, or set {variables}; to start over, move the folder away and run `{INIT_COMMAND}`.")
        return f"{names} missing from the data directory {self.path}. Run `{INIT_COMMAND}` to generate it."

    def holds_installation(self) -> bool:
        return any((self.path / name).exists() for name in INSTALLATION_FILES)

    def read(self, name: str) -> str:
        return (self.path / name).read_text().strip()

    def create(self) -> list[str]:
        """Create what is missing (the directory 0700, its folders, the key files 0600) and
        return it; what exists is kept as it is. Keys are generated for a new installation only."""
        created: list[str] = []
        if not self.path.exists():
            self.path.mkdir(mode=0o700, parents=True)
            created.append(str(self.path))
        elif not self.path.is_dir():
            raise DataDirError(f"OCC_DATA_DIR is {self.path}, which is not a directory.")
        missing = [name for name in self.keys if not (self.path / name).is_file()]
        if missing and self.holds_installation():
            raise DataDirError(self._missing_keys(missing))
        for folder in (*BROKER_FOLDERS, STATIC_FOLDER):
            if not (self.path / folder).is_dir():
                (self.path / folder).mkdir(parents=True)
                created.append(folder + "/")
        for name in missing:
            fd = os.open(self.path / name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as handle:
                handle.write(KEY_FACTORIES[name]())
            created.append(f"{name} (mode 0600)")
        return created


def configured(env: environ.Env, *, project_dir: Path = PROJECT_DIR) -> DataDir:
    """The data directory the environment selects, and the keys it must hold there."""
    value = env.str("OCC_DATA_DIR", default="")
    keys = tuple(name for name, variable in KEY_VARIABLES.items() if not env.str(variable, default=""))
    return DataDir(path=Path(value or project_dir / ".occ").resolve(), keys=keys, default=not value)


def main(argv: Sequence[str] | None = None) -> int:
    argparse.ArgumentParser(
        prog="python -m project.data_dir",
        description="Create OCC's data directory (OCC_DATA_DIR, default .occ/) with its folders and generated "
                    "keys. What exists is kept; keys are generated for a new installation only.",
    ).parse_args(argv)
    env = environ.Env()
    if (PROJECT_DIR / ".env").is_file():
        env.read_env(str(PROJECT_DIR / ".env"))
    data_dir = configured(env)
    try:
        created = data_dir.create()
    except DataDirError as exc:
        print(f"occ: {exc}", file=sys.stderr)
        return 1
    if created:
        print(f"Data directory {data_dir.path}: created {', '.join(created)}.")
    else:
        print(f"Data directory {data_dir.path}: ready, nothing to create.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

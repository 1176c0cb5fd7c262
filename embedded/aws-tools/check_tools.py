"""Prints what is missing of the Python packages the template checks use, and exits 1 if anything is.

The versions are pinned: cfn-lint's findings change between releases, and the build must give the
same answer on every machine. AwsTools.java holds the same list for the install command.
"""

import importlib
import importlib.metadata as metadata
import sys

PINNED = {"cfn-lint": "1.51.0", "aws-sam-translator": "1.110.0", "moto": "5.2.1"}
MODULES = ["cfnlint", "samtranslator", "moto.server", "boto3"]  # moto.server needs moto[server]'s extras

missing = []
for package, version in PINNED.items():
    try:
        found = metadata.version(package)
    except metadata.PackageNotFoundError:
        found = None
    if found != version:
        missing.append(f"{package}=={version} (found {found or 'none'})")
for module in MODULES:
    try:
        importlib.import_module(module)
    except Exception as e:  # an import error, or a package that fails on import
        missing.append(f"module {module} ({e.__class__.__name__}: {e})")
print("; ".join(missing))
sys.exit(1 if missing else 0)

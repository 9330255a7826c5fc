"""Package discovery with the stage-folder mapping.

The four stage folders at the repo root install as ``babelrag.<stage>`` so nothing clashes with other
PyPI names; every sub-package below them is found automatically.
"""
from setuptools import find_packages, setup

STAGE_FOLDERS = ("construct", "annotate", "release", "evaluators")

packages = find_packages(include=["babelrag", "babelrag.*"])
package_dir = {"babelrag": "babelrag"}
for folder in STAGE_FOLDERS:
    root = f"babelrag.{folder}"
    package_dir[root] = folder
    packages.append(root)
    packages += [f"{root}.{sub}" for sub in find_packages(where=folder)]

setup(packages=packages, package_dir=package_dir)

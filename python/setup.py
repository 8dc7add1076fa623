"""Build step of the voxray Python package: builds the shared library with the
repository's Makefile (`make lib`, the parent directory of python/) and ships
build/libvoxray.so inside the package. On Debian it first installs the -dev packages
the library builds with when they are missing (as root, like `make test`; otherwise it
prints the apt-get line); VOXRAY_NO_APT=1 skips that. VOXRAY_MAKE_FLAGS adds make flags
(e.g. "NO_CUDA=1"); VOXRAY_LIB=/path/libvoxray.so ships a library built elsewhere."""
import os
import shlex
import shutil
import subprocess
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
REPO = HERE.parent


# What `make lib` needs (a subset of tools/install-deps.sh: no viewer, no test tools).
DEBIAN_PACKAGES = ["gcc", "make", "libcjson-dev", "libzip-dev", "zlib1g-dev", "libstb-dev"]


def ensure_debian_packages():
    if os.environ.get("VOXRAY_NO_APT") == "1" or not shutil.which("dpkg-query"):
        return  # not Debian: make names whatever is missing
    missing = []
    for p in DEBIAN_PACKAGES:
        r = subprocess.run(["dpkg-query", "-W", "-f=${Status}", p], capture_output=True, text=True)
        if "install ok installed" not in r.stdout:
            missing.append(p)
    if not missing:
        return
    line = "apt-get update && apt-get install -y " + " ".join(missing)
    if os.geteuid() != 0:
        raise SystemExit("voxray: the library needs Debian packages that are missing; run as root:\n  " + line)
    print("voxray: installing " + " ".join(missing), flush=True)
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    subprocess.run(["apt-get", "update", "-qq"], check=True, env=env)
    subprocess.run(["apt-get", "install", "-y", "-qq", "--no-install-recommends"] + missing, check=True, env=env)


class BuildWithLibrary(build_py):
    def run(self):
        super().run()
        lib = os.environ.get("VOXRAY_LIB")
        if lib:
            src = Path(lib)
        else:
            if not (REPO / "Makefile").is_file():
                raise SystemExit("voxray: %s has no Makefile; install from a voxray checkout "
                                 "(pip install ./python) or set VOXRAY_LIB" % REPO)
            ensure_debian_packages()
            flags = shlex.split(os.environ.get("VOXRAY_MAKE_FLAGS", ""))
            jobs = "-j%d" % max(1, min(os.cpu_count() or 1, 8))
            cmd = ["make", "-C", str(REPO), jobs, "lib"] + flags
            print("voxray: " + " ".join(cmd), flush=True)
            r = subprocess.run(cmd)
            if r.returncode != 0:
                raise SystemExit("voxray: `make lib` failed; the Debian packages it needs are installed by "
                                 "`sh tools/install-deps.sh` (libcjson-dev libzip-dev zlib1g-dev libstb-dev)")
            src = REPO / "build" / "libvoxray.so"
        dst = Path(self.build_lib) / "voxray" / "libvoxray.so"
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, dst)


setup(cmdclass={"build_py": BuildWithLibrary})

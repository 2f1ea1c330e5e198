"""What a rerun takes of a bundle's command: the measurement's own settings (its workload, scenario, profile, sizes,
repeats), nothing else. A bundle is data from elsewhere: a word of its command that would steer Hydra (``hydra.*``,
``hydra.mode=MULTIRUN``, a logging handler), resolve something (``${oc.env:SECRET}``: any resolver reaches this
host's environment), connect elsewhere (``backend=ray``, ``ray.address``) or name a file or store (a path, a URI,
a key that holds one) is refused in one line, before anything runs; so is a word hidden inside another (a phase's
own overrides). What the bundle's publisher left out (its data folder, its stores) is said, and the data asked for:
a run that trained on real data is never rerun on synthetic data in silence.
"""

from __future__ import annotations

import re

from suites.errors import inert

__all__ = ["MAX_WORDS", "data_needs", "left_out", "screened"]

# the settings a measurement is made of: what a bundle's command may carry into a rerun, and nothing else
MEASUREMENT = ("profile", "workload", "scenario", "preset", "data", "sampler", "sharing", "backend", "vm", "scale",
               "seed", "repeats", "strict", "study", "sizing", "progress", "host_busy_pct")
# of those, the keys that name a place on the host that ran it (config dataclasses' metadata={"path": True}) or a
# program of its own: never taken from a bundle
PLACES = ("data.root", "data.cache_dir", "study.timings", "study.out_dir", "sizing.out_dir", "vm.image_dir",
          "vm.sysfs", "vm.guest_driver")
BACKENDS = ("local", "vm")  # this host's own guests; ray connects to a cluster a bundle names
PLACE_KEY = re.compile(r"(uri|dir|root|path|_file|out)$", re.I)
PLACE_VALUE = re.compile(r"(^|[\s='\"(,;:\[{])(/|~|\.\.?/)|://|^sqlite:|^file:|[A-Za-z]:\\")
SETTING = re.compile(r"([+~]{0,2})([A-Za-z_][\w.]*)=")  # a key=, also one inside a value (a phase's overrides)
LEFT_OUT = re.compile(r"left out: ([\w.]+(?:, [\w.]+)*)$")
MAX_WORDS, MAX_WORD = 64, 2000


def screened(words: list[str]) -> list[str]:
    """``words`` (a bundle's settings, after ``python -m suites <command>``) where every one is a measurement's
    setting; else a ValueError naming the first that is not, and why."""
    if len(words) > MAX_WORDS:
        raise ValueError(f"its command has {len(words)} settings: a rerun takes at most {MAX_WORDS}")
    for word in words:
        why = refusal(word)
        if why:
            shown = word if len(word) <= 80 else word[:77] + "..."
            raise ValueError(f"its command holds {shown!r}: {why}; a rerun takes the bundle's measurement settings "
                             f"({', '.join(MEASUREMENT[:6])}, ...) only")
    return words


def refusal(word: str) -> str:
    """Why ``word`` is not a measurement's setting ('' where it is one)."""
    if len(word) > MAX_WORD or inert(word) != word:
        return "too long, or control characters"
    if word.startswith("-") or "=" not in word or not SETTING.match(word):
        return "not a key=value setting"
    if "${" in word:
        return "an interpolation (${...}) resolves on this host: its environment, its files"
    for prefix, key in SETTING.findall(word):
        why = key_refusal(prefix, key)
        if why:
            return why
    value = word.split("=", 1)[1]
    if key_of(word) == "backend" and value.strip("'\"") not in BACKENDS:
        return f"backend={value[:20]} connects elsewhere: a rerun runs this host's own guests ({', '.join(BACKENDS)})"
    if PLACE_VALUE.search(value):
        return "its value names a file, folder or store"
    return ""


def key_refusal(prefix: str, key: str) -> str:
    root = key.split(".", 1)[0]
    if prefix.startswith("~"):
        return "it deletes a setting"
    if root == "hydra" or key.startswith("hydra/"):
        return "hydra.* steers how the command runs (its folders, logging, mode), not what it measures"
    if root not in MEASUREMENT:
        return f"{root} is not a measurement setting"
    if key in PLACES or PLACE_KEY.search(key):
        return f"{key} names a place on the host that ran it"
    return ""


def key_of(word: str) -> str:
    return word.split("=", 1)[0].lstrip("+~")


def left_out(command: str) -> list[str]:
    """The keys a bundle's command says were left out (``... left out: data.root, tracking_uri``): each a plain
    dotted name, nothing else taken from the comment."""
    comment = command.split("  # ", 1)[1] if "  # " in command else ""
    found = LEFT_OUT.search(comment)
    return found.group(1).split(", ") if found else []


def data_needs(command: str, data_source: str, extra: list[str]) -> tuple[list[str], str]:
    """(settings the rerun adds, what it says before it runs) for the bundle's data. A run that trained on real data
    reruns on real data (``data.synthetic=false``: a missing data set is an error, never a synthetic stand-in); where
    its ``data.root`` was left out and ``extra`` gives none, a ValueError asks for one."""
    given = {key_of(w) for w in extra}
    if data_source in ("", "None", "synthetic"):
        return [], ""
    words = [] if "data.synthetic" in given else ["data.synthetic=false"]
    if "data.root" in given:
        return words, f"the bundle's run trained on {data_source} data: so does this one (data.synthetic=false)"
    if "data.root" in left_out(command):
        raise ValueError(f"the bundle's run trained on {data_source} data from a folder of its host (data.root, left "
                         "out of the bundle): give yours, e.g. make rerun BUNDLE=... ARGS='data.root=../shared/data' "
                         "(the folder holding MNIST/raw or cifar-10-batches-py)")
    return words, (f"the bundle's run trained on {data_source} data: so does this one (data.synthetic=false; "
                   "data.root: this host's default, data/)")

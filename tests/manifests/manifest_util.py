"""What the manifest checkers share: failures said as they are found, and
every document of a YAML file."""
import yaml

failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL " + msg)


def load(path):
    with open(path) as f:
        return [d for d in yaml.safe_load_all(f) if d]

"""Code to run first in a child process so that importing pyarrow (the spark extra's) fails there: the
tests that prove a path works without pyarrow run that path in such a child."""

BLOCK_PYARROW = """
import sys
class _NoPyarrow:
    def find_spec(self, name, path=None, target=None):
        if name == "pyarrow" or name.startswith("pyarrow."):
            raise ImportError("No module named 'pyarrow' (blocked in this test)")
        return None
sys.meta_path.insert(0, _NoPyarrow())
"""

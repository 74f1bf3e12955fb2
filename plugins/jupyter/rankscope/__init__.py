# SPDX-License-Identifier: MIT
"""RankScope for Jupyter: a client of the IDE bridge (docs/bridge.md) and the %rankscope magic.

    %load_ext rankscope
    %rankscope launch job.json --mode debug

The client is usable without IPython:

    from rankscope import BridgeClient
    with BridgeClient.connect() as bridge:
        print(bridge.runs())
"""

from .client import BridgeClient, BridgeClosed, BridgeError
from .connection import BridgeNotFound, ConnectionInfo, find_bridge, runtime_dir, start_bridge

__all__ = ["BridgeClient", "BridgeClosed", "BridgeError", "BridgeNotFound", "ConnectionInfo", "find_bridge",
           "runtime_dir", "start_bridge", "load_ipython_extension", "unload_ipython_extension"]


def load_ipython_extension(ipython):
    from . import magics  # IPython is needed only here

    magics.load(ipython)


def unload_ipython_extension(ipython):
    from . import magics

    magics.unload(ipython)

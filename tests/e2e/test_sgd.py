"""The recipe's SGD (suites/workloads/sgd.py) is torch.optim.SGD(momentum, nesterov=True) bit for bit, without the
torch._dynamo import torch's Optimizer makes in every guest."""

from __future__ import annotations

import subprocess
import sys

from tests.support.helpers import REPO


def test_a_guest_that_builds_and_steps_it_never_imports_torch_dynamo():
    code = ("import sys, torch\nfrom suites.workloads import airbench94 as r\nnet = r.airbench94_net(3, 4)\n"
            "opt = r.optimizer(net, r.recipe.Hyper(), 64)\nnet(torch.randn(2, 3, 32, 32)).sum().backward()\n"
            "opt.step()\n"
            "print('torch._dynamo' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "False"

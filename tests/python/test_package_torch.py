"""`bitlens.torch` (only where torch is installed; the rest of the suite needs no torch): a
model's and an optimizer's state dicts round trip bit for bit (bf16 included), nested optimizer
states named as bitlens's PyTorch reader names a `torch.save` of them."""
import importlib.util

import pytest

from conftest import run_json
from package_helpers import import_bitlens

bitlens = import_bitlens()
pytestmark = pytest.mark.skipif(importlib.util.find_spec("torch") is None,
                                reason="torch is not installed (bitlens.torch is tested where it is)")


def test_state_dicts_round_trip_and_are_named_as_the_reader_names_them(tmp_path):
    import torch

    import bitlens.torch as bt

    model = torch.nn.Sequential(torch.nn.Linear(8, 4), torch.nn.LayerNorm(4)).to(torch.bfloat16)
    opt = torch.optim.Adam(model.parameters())
    model(torch.ones(2, 8, dtype=torch.bfloat16)).sum().backward()
    opt.step()
    bt.save_file(model.state_dict(), tmp_path / "model.bls")
    back = bt.load_file(tmp_path / "model.bls")
    for name, t in model.state_dict().items():
        assert back[name].dtype == t.dtype and torch.equal(back[name], t)
    state = opt.state_dict()
    bt.save_file(state, tmp_path / "opt.bls")
    torch.save(state, tmp_path / "opt.pt")
    names = {t["name"] for t in run_json("inspect", tmp_path / "opt.pt")["files"][0]["tensors"]}
    assert set(bt.load_file(tmp_path / "opt.bls")) == names
    with bitlens.safe_open(tmp_path / "model.bls", framework="pt") as f:
        name = f.keys()[0]
        assert torch.equal(f.get_tensor(name), model.state_dict()[name])

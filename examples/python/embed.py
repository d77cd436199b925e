"""embed.py: the embed example in Python, with the rill package and numpy.

config -> context -> tensors -> ops -> a decoder stack -> results, each result
checked against numpy in float64. Exit 0 when they match, 1 when not, 77 when
the requested backend is not available here.

usage: python embed.py [backend]     (auto, cpu, vulkan, cuda; default auto)
"""

import sys

import numpy as np

import rill


def main(backend="auto"):
    try:
        ctx = rill.Context('[runtime]\nbackend = "{}"\n'.format(backend))
    except rill.BackendUnavailableError as exc:
        if backend == "auto":
            raise
        print("embed.py: backend {} not available here, skipped: {}".format(backend, exc))
        return 77

    with ctx:
        print("rill {}.{}.{} on {} ({})".format(*rill.version(), ctx.backend_name, ctx.device_name))
        rng = np.random.default_rng(0)
        rows, dim, n = 4, 64, 32
        residual0 = rng.standard_normal((rows, dim)).astype(np.float32)
        update0 = rng.standard_normal((rows, dim)).astype(np.float32)
        weight0 = rng.uniform(0.5, 1.5, dim).astype(np.float32)
        w0 = (0.2 * rng.standard_normal((n, dim))).astype(np.float32)

        # Tensors from numpy arrays; ops queued on the context.
        residual, x = ctx.tensor(residual0), ctx.tensor(update0)
        weight, w = ctx.tensor(weight0), ctx.tensor(w0)
        ctx.fused_add_rms_norm(x, residual, weight=weight, eps=1e-6)
        y = ctx.gemm(x, w)

        # The same in float64 with numpy.
        r = residual0.astype(np.float64) + update0
        x_ref = r / np.sqrt(np.mean(r * r, axis=-1, keepdims=True) + 1e-6) * weight0
        y_ref = x_ref @ w0.astype(np.float64).T
        err_r = np.max(np.abs(residual.read() - r))
        err_y = np.max(np.abs(y.read() - y_ref))
        print("fused add+rms_norm: max |error| {:.2e}; gemm: max |error| {:.2e}".format(err_r, err_y))
        if not (err_r < 1e-5 and err_y < 1e-4):
            print("embed.py: results differ from numpy", file=sys.stderr)
            return 1

        # Errors are exceptions carrying librill's message.
        try:
            ctx.gemm(x, w, out=ctx.empty((rows, n + 1)))
            print("embed.py: a wrongly shaped GEMM output was accepted", file=sys.stderr)
            return 1
        except rill.ShapeError as exc:
            print("expected error: {}".format(exc))

        # A decoder stack: prefill 5 tokens, and the same 5 as 4 + 1 cached decode step.
        desc = rill.ModelDesc(num_layers=2, hidden_size=dim, num_heads=4, num_kv_heads=2, intermediate_size=2 * dim)
        with ctx.model(desc) as model:
            set_random_weights(model, desc, rng)
            tokens = rng.standard_normal((1, 5, dim)).astype(np.float32)
            try:
                full = model.forward(ctx.tensor(tokens)).read()
            except rill.UnsupportedError as exc:
                print("decoder stack: not supported on {}: {}".format(ctx.backend_name, exc))
                return 0
            with model.kv_cache(batch=1, capacity=8) as cache:
                model.forward(ctx.tensor(tokens[:, :4]), cache)
                last = model.forward(ctx.tensor(tokens[:, 4:]), cache).read()
                diff = np.max(np.abs(last[0, 0] - full[0, 4]))
                print("decoder stack: prefill vs cached decode, last token max |difference| {:.2e}, "
                      "cache holds {}".format(diff, cache.length(0)))
                if not (diff < 1e-4 and cache.length(0) == 5):
                    print("embed.py: the cached decode step disagrees with the prefill", file=sys.stderr)
                    return 1
    return 0


def set_random_weights(model, desc, rng):
    """Small random weights for a pre-norm SwiGLU stack without biases."""
    d, hd = desc.hidden_size, desc.hidden_size // desc.num_heads
    q, kv, inter = desc.num_heads * hd, desc.num_kv_heads * hd, desc.intermediate_size
    shapes = {"self_attn.q_proj.weight": (q, d), "self_attn.k_proj.weight": (kv, d),
              "self_attn.v_proj.weight": (kv, d), "self_attn.o_proj.weight": (d, q),
              "mlp.gate_proj.weight": (inter, d), "mlp.up_proj.weight": (inter, d),
              "mlp.down_proj.weight": (d, inter)}
    for layer in range(desc.num_layers):
        prefix = "model.layers.{}.".format(layer)
        for name, shape in shapes.items():
            model.set_weight(prefix + name, (rng.standard_normal(shape) / np.sqrt(shape[1])).astype(np.float32))
        for norm in ("input_layernorm.weight", "post_attention_layernorm.weight"):
            model.set_weight(prefix + norm, rng.uniform(0.9, 1.1, d).astype(np.float32))
    model.set_weight("model.norm.weight", rng.uniform(0.9, 1.1, d).astype(np.float32))
    model.check_weights()


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:2]))

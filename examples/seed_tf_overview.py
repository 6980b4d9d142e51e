"""The XLA overview's TensorFlow code blocks (seeds 000/001), run with xlapy.

Each block is the seed's code with ``import tensorflow as tf`` replaced by
``import xlapy.tf as tf``; lines that had to change, and lines added to run or show a
block, carry a comment saying so. The blocks:

1. ``model_fn``: ``tf.reduce_sum(x + y * z)`` compiles to one fusion;
2. ``train_mnist``: the MNIST step with ``tf.GradientTape`` compiled as one function (its
   ``cast``/``layer``/``optimizer`` come from the ``jit_compile`` tutorial, seed 002);
3. ``not_compilable``: ``tf.unique`` has a data-dependent shape: as written (plain
   ``@tf.function``) it runs as a graph of ops; under ``jit_compile=True`` it raises
   ``InvalidArgumentError`` naming this file's line; with ``set_jit(True)`` it is
   auto-clustered (``tf.unique`` stays out of the clusters);
4. ``recompiled_on_launch``: a new shape compiles again, a seen one hits the cache;
5. ``step_fn``/``run_fn``: ``all_reduce`` under a strategy lowers to HLO ``all-reduce``.

Run: ``.venv/bin/python examples/seed_tf_overview.py``.
"""
import logging

import numpy as np

import xlapy.tf as tf  # changed: was `import tensorflow as tf`

print("=== 1. model_fn ===")  # added: section header


def model_fn(x, y, z):
  return tf.reduce_sum(x + y * z)


x = y = z = tf.constant(np.arange(8, dtype=np.float32))  # added: inputs for the block
compiled_model_fn = tf.function(model_fn, jit_compile=True)  # added: compile the seed's model_fn
print("eager:", model_fn(x, y, z), " compiled:", compiled_model_fn(x, y, z))  # added
optimized = compiled_model_fn.experimental_get_compiler_ir(x, y, z)(stage="optimized_hlo")  # added
print("fusions in the optimized HLO:", optimized.count(" fusion("))  # added: XLA fuses it into one kernel

print("=== 2. train_mnist ===")  # added: section header
# added: the names train_mnist uses, defined as in the jit_compile tutorial (seed 002)
IMAGE_SIZE = 28 * 28
NUM_CLASSES = 10


def cast(images, labels):
  images = tf.cast(
      tf.reshape(images, [-1, IMAGE_SIZE]), tf.float32)
  labels = tf.cast(labels, tf.int64)
  return (images, labels)


layer = tf.keras.layers.Dense(NUM_CLASSES)
optimizer = tf.keras.optimizers.Adam()


@tf.function(jit_compile=True)
def train_mnist(images, labels):
    images, labels = cast(images, labels)

    with tf.GradientTape() as tape:
      predicted_labels = layer(images)
      loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
          logits=predicted_labels, labels=labels
      ))
    layer_variables = layer.trainable_variables
    grads = tape.gradient(loss, layer_variables)
    optimizer.apply_gradients(zip(grads, layer_variables))


rng = np.random.default_rng(0)  # added: a random batch (the overview has no data)
images = rng.integers(0, 256, (100, 28, 28)).astype(np.uint8)  # added
labels = rng.integers(0, 10, (100,)).astype(np.uint8)  # added
for _ in range(3):  # added: three steps of the compiled function
  train_mnist(images, labels)  # added
print("optimizer steps:", int(optimizer.iterations.numpy()),  # added
      " compiles:", train_mnist.cache_info().misses)  # added
hlo = train_mnist.experimental_get_compiler_ir(images, labels)(stage="hlo")  # added
header = hlo.splitlines()[0]  # added: the module header: the Variables are aliased in and out
print(header[:header.index(",")] + ",", header[header.index("input_output_alias"):])  # added

print("=== 3. not_compilable ===")  # added: section header


@tf.function
def not_compilable(x):
  return tf.unique(x)


values = tf.constant([3, 1, 3, 2, 1])  # added: an input
print("as written (a graph):", not_compilable(values).y)  # added


@tf.function(jit_compile=True)  # added: the seed's point is what jit_compile=True does
def not_compilable_jit(x):  # added
  return tf.unique(x)  # added (the line the error names)


try:  # added
  not_compilable_jit(values)  # added
except tf.errors.InvalidArgumentError as e:  # added
  print("jit_compile=True: InvalidArgumentError:", e)  # added

logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")  # added
logging.getLogger("xlapy.jit").setLevel(logging.INFO)  # added: show the fallback's reason
tf.config.optimizer.set_jit(True)  # added: auto-clustering: compile what can be compiled
print("set_jit(True):", not_compilable(values).y)  # added: auto-clustered, unique left out
tf.config.optimizer.set_jit(False)  # added
logging.getLogger("xlapy.jit").setLevel(logging.WARNING)  # added

print("=== 4. recompiled_on_launch ===")  # added: section header


@tf.function(jit_compile=True)
def recompiled_on_launch(a, b):
  return a + b


recompiled_on_launch(tf.ones([1, 10]), tf.ones([1, 10]))
recompiled_on_launch(tf.ones([1, 100]), tf.ones([1, 100]))
recompiled_on_launch(tf.ones([1, 10]), tf.ones([1, 10]))  # added: the first shape again: a cache hit
info = recompiled_on_launch.cache_info()  # added
print(f"compiles: {info.misses}, cache hits: {info.hits}")  # added
for record in info.compiles:  # added
  print(f"  compiled for ({record.signature}): {record.reason}")  # added

print("=== 5. all_reduce ===")  # added: section header
strategy = tf.distribute.MirroredStrategy()  # added: the seed uses `strategy` without defining it (no GPU: one CPU replica)


@tf.function(jit_compile=True)
def step_fn():
  t = tf.ones(shape=[100], dtype=tf.float32)
  ctx = tf.distribute.get_replica_context()
  return ctx.all_reduce(tf.distribute.ReduceOp.SUM, t)


@tf.function
def run_fn():
  return strategy.run(step_fn)


result = run_fn()  # added
print("run_fn():", result.shape, "sum", float(tf.reduce_sum(result)))  # added
step_hlo = step_fn.experimental_get_compiler_ir()(stage="hlo")  # added
print("HLO all-reduce:", [l.strip() for l in step_hlo.splitlines() if "all-reduce(" in l])  # added

"""The TensorFlow auto-clustering tutorial on CIFAR-10 (seed 002), run with xlapy.

The tutorial's Keras code, in order, with ``import tensorflow as tf`` replaced by
``import xlapy.tf as tf``: the CNN is trained with ``tf.config.optimizer.set_jit(False)``
(op by op), then, after ``clear_session``, with ``set_jit(True)`` (compiled). Lines that
had to change carry a comment saying why:

- the tutorial asserts that a GPU exists. xlapy has no GPU, and TensorFlow on a
  CPU-only machine fails that assert too; the assert is kept, behind a check that says
  so and goes on on the CPU;
- ``%time`` is IPython; here the training is timed with ``time.perf_counter``;
- ``batch_size=256`` and the 25 epochs come from ``--batch-size`` and ``--epochs`` (same
  defaults), so that a test can run one tiny epoch;
- ``--random-data`` replaces ``cifar10.load_data()`` (which reads
  ``~/.keras/datasets`` and never downloads) by random images of CIFAR-10's shape;
  ``--steps N`` keeps ``N`` batches of training data.

Run: ``.venv/bin/python examples/seed_tf_cifar10.py --random-data --steps 2 --batch-size 32
--epochs 1`` (the full tutorial takes hours on a CPU).
"""
import argparse  # added: command-line options
import time  # added: replaces IPython's %time

import numpy as np  # added: random data

import xlapy.tf as tf  # changed: was `import tensorflow as tf`

parser = argparse.ArgumentParser(description="The XLA auto-clustering CIFAR-10 tutorial")  # added
parser.add_argument("--random-data", action="store_true", help="random images, CIFAR's shape")  # added
parser.add_argument("--steps", type=int, default=None, help="training batches kept per epoch")  # added
parser.add_argument("--batch-size", type=int, default=256)  # added
parser.add_argument("--epochs", type=int, default=25)  # added
ARGS = parser.parse_args()  # added


def random_cifar10():  # added: --random-data
  rng = np.random.default_rng(0)
  n_train = (ARGS.steps or 4) * ARGS.batch_size
  n_test = ARGS.batch_size
  return ((rng.integers(0, 256, (n_train, 32, 32, 3), dtype=np.uint8),
           rng.integers(0, 10, (n_train, 1), dtype=np.uint8)),
          (rng.integers(0, 256, (n_test, 32, 32, 3), dtype=np.uint8),
           rng.integers(0, 10, (n_test, 1), dtype=np.uint8)))


# Check that GPU is available: cf. https://colab.research.google.com/notebooks/gpu.ipynb
if not tf.test.gpu_device_name():  # changed: xlapy has no GPU (TF on a CPU-only machine fails the assert too)
  print("tf.test.gpu_device_name() is '': no GPU, so the tutorial's assert would fail; "  # added
        "running on the CPU instead")  # added
else:  # added
  assert(tf.test.gpu_device_name())

tf.keras.backend.clear_session()
tf.config.optimizer.set_jit(False) # Start with XLA disabled.

def load_data():
  if ARGS.random_data:  # added: no data set here
    (x_train, y_train), (x_test, y_test) = random_cifar10()  # added
  else:  # added
    (x_train, y_train), (x_test, y_test) = tf.keras.datasets.cifar10.load_data()
  if ARGS.steps:  # added: --steps keeps N batches of training data
    x_train, y_train = x_train[:ARGS.steps * ARGS.batch_size], y_train[:ARGS.steps * ARGS.batch_size]  # added
  x_train = x_train.astype('float32') / 256
  x_test = x_test.astype('float32') / 256

  # Convert class vectors to binary class matrices.
  y_train = tf.keras.utils.to_categorical(y_train, num_classes=10)
  y_test = tf.keras.utils.to_categorical(y_test, num_classes=10)
  return ((x_train, y_train), (x_test, y_test))

(x_train, y_train), (x_test, y_test) = load_data()

def generate_model():
  return tf.keras.models.Sequential([
    tf.keras.layers.Conv2D(32, (3, 3), padding='same', input_shape=x_train.shape[1:]),
    tf.keras.layers.Activation('relu'),
    tf.keras.layers.Conv2D(32, (3, 3)),
    tf.keras.layers.Activation('relu'),
    tf.keras.layers.MaxPooling2D(pool_size=(2, 2)),
    tf.keras.layers.Dropout(0.25),

    tf.keras.layers.Conv2D(64, (3, 3), padding='same'),
    tf.keras.layers.Activation('relu'),
    tf.keras.layers.Conv2D(64, (3, 3)),
    tf.keras.layers.Activation('relu'),
    tf.keras.layers.MaxPooling2D(pool_size=(2, 2)),
    tf.keras.layers.Dropout(0.25),

    tf.keras.layers.Flatten(),
    tf.keras.layers.Dense(512),
    tf.keras.layers.Activation('relu'),
    tf.keras.layers.Dropout(0.5),
    tf.keras.layers.Dense(10),
    tf.keras.layers.Activation('softmax')
  ])

model = generate_model()

def compile_model(model):
  opt = tf.keras.optimizers.RMSprop(lr=0.0001, decay=1e-6)
  model.compile(loss='categorical_crossentropy',
                optimizer=opt,
                metrics=['accuracy'])
  return model

model = compile_model(model)

def train_model(model, x_train, y_train, x_test, y_test, epochs=25):
  model.fit(x_train, y_train, batch_size=ARGS.batch_size, epochs=epochs, validation_data=(x_test, y_test), shuffle=True)  # changed: batch_size=256 -> --batch-size (default 256)

def warmup(model, x_train, y_train, x_test, y_test):
  # Warm up the JIT, we do not wish to measure the compilation time.
  initial_weights = model.get_weights()
  train_model(model, x_train, y_train, x_test, y_test, epochs=1)
  model.set_weights(initial_weights)


def report(label, model, seconds):  # added: what %time and the tutorial's text show
  compiled = bool(getattr(model, "jit_compile", False))
  print(f"{label}: {ARGS.epochs} epochs in {seconds:.2f}s (wall time, after warm-up); "
        f"train step compiled: {compiled}")
  if compiled:
    info = model.train_function.cache_info()
    print(f"{label}: train step compiles: {info.misses}, cache hits: {info.hits}")
    print(f"{label}: auto-clustering summary: 1 cluster, the whole train step "  # added
          f"(it compiles as one program, so xlapy makes it one cluster)")  # added


warmup(model, x_train, y_train, x_test, y_test)
start = time.perf_counter()  # added
train_model(model, x_train, y_train, x_test, y_test, epochs=ARGS.epochs)  # changed: was `%time train_model(model, x_train, y_train, x_test, y_test)` (IPython)
eager_seconds = time.perf_counter() - start  # added
report("set_jit(False)", model, eager_seconds)  # added

scores = model.evaluate(x_test, y_test, verbose=1)
print('Test loss:', scores[0])
print('Test accuracy:', scores[1])

# We need to clear the session to enable JIT in the middle of the program.
tf.keras.backend.clear_session()
tf.config.optimizer.set_jit(True) # Enable XLA.
model = compile_model(generate_model())
(x_train, y_train), (x_test, y_test) = load_data()

warmup(model, x_train, y_train, x_test, y_test)
start = time.perf_counter()  # added
train_model(model, x_train, y_train, x_test, y_test, epochs=ARGS.epochs)  # changed: was `%time train_model(model, x_train, y_train, x_test, y_test)` (IPython)
xla_seconds = time.perf_counter() - start  # added
report("set_jit(True)", model, xla_seconds)  # added
print(f"speed-up of set_jit(True) over set_jit(False): {eager_seconds / xla_seconds:.2f}x")  # added

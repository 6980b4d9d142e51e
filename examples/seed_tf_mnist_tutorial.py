"""The TensorFlow tutorial "Use XLA with tf.function" (seed 002), run with xlapy.

The tutorial's code, in order, with ``import tensorflow as tf`` replaced by
``import xlapy.tf as tf``. Lines that had to change carry a comment saying why; lines
marked ``# added`` report what happened (the tutorial's ``train_mnist`` returns nothing,
so the test-set loss is printed before and after training).

Data: ``tf.keras.datasets.mnist.load_data()`` reads ``~/.keras/datasets/mnist.npz`` and
raises here when it is absent (nothing is downloaded); then scikit-learn's 8x8 digits are
used, upsampled 3x to 24x24 and zero-padded to 28x28 with MNIST's 0..255 pixel range,
as ``examples/mnist_jit_compile.py`` does.

Run: ``.venv/bin/python examples/seed_tf_mnist_tutorial.py [--steps 1000]``.
"""
import argparse  # added: --steps

import numpy as np  # added: the data fallback

import xlapy.tf as tf  # changed: was `import tensorflow as tf`
tf.compat.v1.enable_eager_execution()

parser = argparse.ArgumentParser(description="The XLA tf.function MNIST tutorial")  # added
parser.add_argument("--steps", type=int, default=1000, help="TRAIN_STEPS (tutorial: 1000)")  # added
ARGS = parser.parse_args()  # added


def digits_as_mnist():  # added: the fallback data set (see the module docstring)
  (x, y), (xt, yt) = tf.keras.datasets.digits.load_data(test_split=0.2, seed=0)

  def to_28(images):
    big = np.kron(images.astype(np.float32), np.ones((1, 3, 3), np.float32))
    return (np.pad(big, ((0, 0), (2, 2), (2, 2))) * (255.0 / 16.0)).round().astype(np.uint8)
  return (to_28(x), y.astype(np.uint8)), (to_28(xt), yt.astype(np.uint8))


# Size of each input image, 28 x 28 pixels
IMAGE_SIZE = 28 * 28
# Number of distinct number labels, [0..9]
NUM_CLASSES = 10
# Number of examples in each training batch (step)
TRAIN_BATCH_SIZE = 100
# Number of training steps to run
TRAIN_STEPS = ARGS.steps  # changed: was 1000, now --steps (default 1000)

# Loads MNIST dataset.
try:  # added: no download here
  train, test = tf.keras.datasets.mnist.load_data()
except tf.errors.InvalidArgumentError as e:  # added: MNIST is not on this machine
  print("MNIST not available; using scikit-learn's digits upsampled to 28x28")  # added
  train, test = digits_as_mnist()  # added
train_ds = tf.data.Dataset.from_tensor_slices(train).batch(TRAIN_BATCH_SIZE).repeat()


# Casting from raw data to the required datatypes.
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


def test_loss():  # added: the mean cross-entropy on the test set
  images, labels = cast(test[0], test[1])
  return float(tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
      logits=layer(images), labels=labels)))


print(f"test loss before training: {test_loss():.4f}")  # added

for images, labels in train_ds:
  if optimizer.iterations > TRAIN_STEPS:
    break
  train_mnist(images, labels)

print(f"test loss after training: {test_loss():.4f}")  # added
info = train_mnist.cache_info()  # added
print(f"steps: {int(optimizer.iterations.numpy())}, compiles: {info.misses}, "  # added
      f"cache hits: {info.hits}")  # added
for record in info.compiles:  # added
  print(f"  compiled for ({record.signature}): {record.reason}")  # added

images, labels = cast(test[0], test[1])
predicted_labels = layer(images)
correct_prediction = tf.equal(tf.argmax(predicted_labels, 1), labels)
accuracy = tf.reduce_mean(tf.cast(correct_prediction, tf.float32))
print("Prediction accuracy after training: %s" % accuracy)

print(train_mnist.experimental_get_compiler_ir(images, labels)(stage='hlo'))

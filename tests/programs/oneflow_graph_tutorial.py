# OneFlow's nn.Graph tutorial (github.com/Oneflow-Inc/oneflow-documentation, en/docs/basics/08_nn_graph.md): the
# graph training script, then its printing, debugging, state-dict and graph saving cells, with `import oneflow`
# changed to `import oneflow_lite`. Changed, data and model source only: flowvision (not installed; it downloads)
# gives CIFAR10 and mobilenet_v2; here CIFAR10 is synthetic (3x32x32 floats, int labels 0..9, 128 images) and
# mobilenet_v2 comes from Oneflow-Inc/models (oneflow_mobilenetv2.py), shrunk through its constructor arguments.
import numpy as np

import oneflow_lite as flow
import oneflow_lite.nn as nn

from oneflow_mobilenetv2 import mobilenet_v2


class CIFAR10(flow.utils.data.Dataset):
    """Stand-in for flowvision.datasets.CIFAR10(..., transform=transforms.ToTensor())."""

    def __init__(self):
        rng = np.random.default_rng(0)
        self.targets = rng.integers(0, 10, 128)
        prototypes = np.random.default_rng(5).random((10, 3, 32, 32))
        self.data = np.clip(prototypes[self.targets] + rng.normal(0, 0.2, (128, 3, 32, 32)), 0, 1).astype(np.float32)

    def __len__(self):
        return len(self.targets)

    def __getitem__(self, i):
        return flow.tensor(self.data[i]), int(self.targets[i])


BATCH_SIZE=64
EPOCH_NUM = 1

DEVICE = "cuda" if flow.cuda.is_available() else "cpu"
print("Using {} device".format(DEVICE))

training_data = CIFAR10()

train_dataloader = flow.utils.data.DataLoader(
    training_data, BATCH_SIZE, shuffle=True, drop_last=True
)

model = mobilenet_v2(num_classes=10, width_mult=0.25, inverted_residual_setting=[[1, 8, 1, 1], [2, 8, 2, 2]]).to(DEVICE)
model.classifer = nn.Sequential(nn.Dropout(0.2), nn.Linear(model.last_channel, 10))
model.train()

loss_fn = nn.CrossEntropyLoss().to(DEVICE)
optimizer = flow.optim.SGD(model.parameters(), lr=1e-3)

class GraphMobileNetV2(flow.nn.Graph):
    def __init__(self):
        super().__init__()
        self.model = model
        self.loss_fn = loss_fn
        self.add_optimizer(optimizer)

    def build(self, x, y):
        y_pred = self.model(x)
        loss = self.loss_fn(y_pred, y)
        loss.backward()
        return loss


graph_mobile_net_v2 = GraphMobileNetV2()
# graph_mobile_net_v2.debug()

for t in range(EPOCH_NUM):
    print(f"Epoch {t+1}\n-------------------------------")
    size = len(train_dataloader.dataset)
    for batch, (x, y) in enumerate(train_dataloader):
        x = x.to(DEVICE)
        y = y.to(DEVICE)
        loss = graph_mobile_net_v2(x, y)
        current = batch * BATCH_SIZE
        if batch % 5 == 0:
            print(f"loss: {loss:>7f}  [{current:>5d}/{size:>5d}]")

print(graph_mobile_net_v2)

graph_mobile_net_v2.debug(v_level=1) # The defalut of v_level is 0.

graph_mobile_net_v2.debug(1)

CHECKPOINT_SAVE_DIR = "./GraphMobileNetV2"

import shutil
shutil.rmtree(CHECKPOINT_SAVE_DIR, ignore_errors=True)  # Clear previous state
flow.save(graph_mobile_net_v2.state_dict(), CHECKPOINT_SAVE_DIR)

state_dict = flow.load(CHECKPOINT_SAVE_DIR)
graph_mobile_net_v2.load_state_dict(state_dict)

MODEL_SAVE_DIR="./mobile_net_v2_model"
import os
if not os.path.exists(MODEL_SAVE_DIR):
    os.makedirs(MODEL_SAVE_DIR)
flow.save(graph_mobile_net_v2, MODEL_SAVE_DIR)

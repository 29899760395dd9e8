"""The DPED student as an MLflow pyfunc model: word -> vector lookup over the released vectors.

Holds only the release (DP word vectors); input a DataFrame with a ``word`` column, output the
vectors (NaN rows for words outside the released vocabulary).
"""
from __future__ import annotations

import mlflow.pyfunc
import numpy as np
import pandas as pd


class WordVectorsModel(mlflow.pyfunc.PythonModel):
    def load_context(self, context):
        data = np.load(context.artifacts["word_vectors"])
        self.index = {w: i for i, w in enumerate(data["words"].tolist())}
        self.vectors = data["vectors"]

    def predict(self, context, model_input: pd.DataFrame, params=None) -> np.ndarray:
        out = np.full((len(model_input), self.vectors.shape[1]), np.nan, dtype=np.float32)
        for j, word in enumerate(model_input["word"]):
            if word in self.index:
                out[j] = self.vectors[self.index[word]]
        return out

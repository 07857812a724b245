"""What a run shows people and tools: the report in the run folder, a model card, experiment tracking.

The Markdown and HTML report with its plots (:mod:`.report`), the CycloneDX or skops model card
(:mod:`.model_card`), and MLflow logging (:mod:`.tracking`, with the ``mlflow`` extra). Import the module you need;
this package imports none of them, so that reading a run folder does not load matplotlib.
"""

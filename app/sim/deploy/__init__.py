"""The deployment explainer: a model on GPUs, vLLM 0.33's memory and KV-block arithmetic."""

from app.sim.deploy.explainer import DeployExplainer, DeployTrace

__all__ = ["DeployExplainer", "DeployTrace"]

"""Stepscope: step-through simulations of Linux networking internals and LLM serving."""

"""The source projects a step can cite, and how a citation becomes a link.

Linux explainers cite Linux 6.4 on elixir.bootlin.com; the scheduler cites vLLM v0.33.0 on
GitHub. A new project is one more :class:`SourceProject` value: nothing else changes.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True, kw_only=True)
class SourceProject:
    """A code base steps cite: its name, the exact version modelled and a link template."""

    key: str  # short id used in JSON ("linux", "vllm")
    name: str  # shown to readers ("Linux", "vLLM")
    version: str  # "v6.4", "v0.33.0"
    url_template: str  # ``{path}`` and ``{line}`` are filled in

    def url(self, path: str, line: int) -> str:
        return self.url_template.format(path=path, line=line, version=self.version)

    @property
    def label(self) -> str:
        return f"{self.name} {self.version.removeprefix('v')}"

    def ref(self, function: str, path: str, line: int) -> SourceRef:
        """A citation of ``function``, defined at ``path``:``line`` in this project."""
        return SourceRef(function=function, path=path, line=line, project=self)


LINUX_6_4 = SourceProject(
    key="linux",
    name="Linux",
    version="v6.4",
    url_template="https://elixir.bootlin.com/linux/{version}/source/{path}#L{line}",
)
VLLM_0_33 = SourceProject(
    key="vllm",
    name="vLLM",
    version="v0.33.0",
    url_template="https://github.com/vllm-project/vllm/blob/{version}/{path}#L{line}",
)


@dataclass(frozen=True, slots=True, kw_only=True)
class SourceRef:
    """The function a step models, with its file and line in its project's cited version."""

    function: str
    path: str
    line: int
    project: SourceProject = LINUX_6_4

    @property
    def url(self) -> str:
        return self.project.url(self.path, self.line)

    def as_dict(self) -> dict[str, str | int]:
        return {
            "function": self.function,
            "path": self.path,
            "line": self.line,
            "project": self.project.key,
            "url": self.url,
        }

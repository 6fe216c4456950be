"""Folding ranges: phases, fenced code blocks and front matter."""

from __future__ import annotations

from lsprotocol import types

from .server import BatonServer, guard, uri_path


def register(server: BatonServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_FOLDING_RANGE)
    @guard(list)
    def folding_range(ls: BatonServer,
                      params: types.FoldingRangeParams) -> list[types.FoldingRange]:
        # the core loads on first use
        from ..model.plan import Plan
        from ..parse.markdown import parse_markdown
        from ..parse.text import Source

        path = uri_path(params.text_document.uri)
        if path is None:
            return []
        from ..model.data import Unreadable  # the core loads on first use

        doc = ls.session.index_for(path).document(path)
        if isinstance(doc, Unreadable):  # over the size limit, binary: not parsed here either
            return []
        lines = ls.session.lines_of(path)
        out: list[types.FoldingRange] = []
        if isinstance(doc, Plan):
            for phase in doc.phases:
                end = phase.range.end_line
                while end > phase.range.start_line and not lines[end].strip():
                    end -= 1
                if end > phase.range.start_line:
                    out.append(types.FoldingRange(start_line=phase.range.start_line,
                                                  end_line=end,
                                                  kind=types.FoldingRangeKind.Region))
        if path.endswith(".md"):
            md = parse_markdown(Source.from_text("\n".join(lines)))
            if md.frontmatter_end > 0:
                out.append(types.FoldingRange(start_line=0, end_line=md.frontmatter_end,
                                              kind=types.FoldingRangeKind.Region))
            for fence in md.fences:
                if fence.end_line > fence.start_line:
                    out.append(types.FoldingRange(start_line=fence.start_line,
                                                  end_line=fence.end_line))
        return out

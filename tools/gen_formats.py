"""Write docs/formats.md from the pydantic models (gpufleet.report.formats)."""

from pathlib import Path

from gpufleet.report.formats import markdown

if __name__ == "__main__":
    path = Path(__file__).resolve().parent.parent / "docs" / "formats.md"
    path.write_text(markdown())
    print(f"wrote {path}")

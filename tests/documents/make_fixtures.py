#!/usr/bin/env python3
"""Writes the documents parse_document's tests read, with the real writers people use
(python-docx, python-pptx, openpyxl, reportlab, xlwt, odfpy: tests/documents/requirements.txt).

    python make_fixtures.py OUTDIR [--rows N]

Every file is made fresh at test time (nothing binary is committed). What each one holds is what
the tests assert: keep the two in step.
"""

import os
import sys
import zipfile

from docx import Document
from openpyxl import Workbook
from pptx import Presentation
from pptx.util import Inches
from reportlab.lib.pagesizes import A4
from reportlab.pdfgen import canvas


def docx(out):
    doc = Document()
    doc.add_heading("Quarterly report", level=1)
    para = doc.add_paragraph("Revenue grew in every region. ")
    para.add_run("Margins held.").bold = True
    doc.add_heading("Regions", level=2)
    table = doc.add_table(rows=3, cols=3)
    for r, row in enumerate([["Region", "Q1", "Q2"], ["North", "120", "135"], ["South", "98", "101"]]):
        for c, value in enumerate(row):
            table.cell(r, c).text = value
    doc.add_paragraph("First point", style="List Bullet")
    doc.add_paragraph("Second point", style="List Bullet")
    doc.add_paragraph("Closing words with a pipe | inside.")
    doc.save(os.path.join(out, "report.docx"))
    return doc


def docx_big_entry(out):
    """A real DOCX plus one entry that inflates to 210 MB (200 MB is the limit)."""
    path = os.path.join(out, "inflates.docx")
    Document().save(path)
    with zipfile.ZipFile(path, "a", compression=zipfile.ZIP_DEFLATED) as z:
        with z.open("word/media/padding.bin", "w", force_zip64=True) as entry:
            chunk = b"\0" * (1 << 20)
            for _ in range(210):
                entry.write(chunk)


def docx_liar(out):
    """A DOCX whose padding entry declares 1,000 bytes and inflates to 210 MB."""
    import struct

    path = os.path.join(out, "liar.docx")
    Document().save(path)
    with zipfile.ZipFile(path, "a", compression=zipfile.ZIP_DEFLATED) as z:
        z.writestr("word/media/padding.bin", b"\0" * (210 << 20))
    data = bytearray(open(path, "rb").read())
    name = b"word/media/padding.bin"
    for signature, size_at, name_at in ((b"PK\x01\x02", 24, 46), (b"PK\x03\x04", 22, 30)):
        at = data.find(signature)
        while at != -1:
            if data[at + name_at : at + name_at + len(name)] == name:
                struct.pack_into("<I", data, at + size_at, 1000)
            at = data.find(signature, at + 4)
    open(path, "wb").write(bytes(data))


def zip_bomb(out):
    """A DOCX-named archive of 10,001 entries (10,000 is the limit)."""
    with zipfile.ZipFile(os.path.join(out, "entries.docx"), "w") as z:
        z.writestr("[Content_Types].xml", "<Types/>")
        for i in range(10_000):
            z.writestr(f"word/e{i}.xml", "")


def pptx(out):
    prs = Presentation()
    for n, (title, body) in enumerate(
        [("Launch plan", "Ship in March"), ("Risks", "Supply of chips"), ("Next steps", "Hire two engineers")],
        start=1,
    ):
        slide = prs.slides.add_slide(prs.slide_layouts[1])
        slide.shapes.title.text = title
        slide.placeholders[1].text = body
        box = slide.shapes.add_textbox(Inches(1), Inches(6), Inches(4), Inches(1))
        box.text_frame.text = f"slide footer {n}"
    prs.save(os.path.join(out, "deck.pptx"))


def xlsx(out, rows):
    wb = Workbook()
    q1 = wb.active
    q1.title = "Q1"
    q1.append(["Product", "Units", "Price"])
    q1.append(["Widget", 10, 2.5])
    q1.append(["Gadget", 3, 10])
    q1.append(["Pipe | name", 1, 0.5])
    q2 = wb.create_sheet("Q2")
    q2.append(["Product", "Units"])
    q2.append(["Widget", 12])
    wb.save(os.path.join(out, "book.xlsx"))

    # Two cells far apart: a reader that allocates the whole rectangle needs gigabytes.
    wide = Workbook()
    wide.active["A1"] = "corner"
    wide.active["ZZ100000"] = "far"
    wide.save(os.path.join(out, "wide.xlsx"))

    big = Workbook(write_only=True)
    sheet = big.create_sheet("Data")
    sheet.append(["id", "name", "amount", "region", "note"])
    for i in range(1, rows + 1):
        sheet.append([i, f"item {i}", i * 1.5, ["north", "south", "east", "west"][i % 4], f"row {i}"])
    big.save(os.path.join(out, "rows.xlsx"))


def xls(out):
    import xlwt

    book = xlwt.Workbook()
    sheet = book.add_sheet("Legacy")
    for r, row in enumerate([["Name", "Score"], ["Ada", 36], ["Alan", 41]]):
        for c, value in enumerate(row):
            sheet.write(r, c, value)
    book.save(os.path.join(out, "legacy.xls"))


def ods(out):
    from odf.opendocument import OpenDocumentSpreadsheet
    from odf.table import Table, TableCell, TableRow
    from odf.text import P

    doc = OpenDocumentSpreadsheet()
    table = Table(name="Budget")
    for row in [["Item", "Cost"], ["Rent", "900"], ["Food", "300"]]:
        tr = TableRow()
        for value in row:
            cell = TableCell(valuetype="string")
            cell.addElement(P(text=value))
            tr.addElement(cell)
        table.addElement(tr)
    doc.spreadsheet.addElement(table)
    doc.save(os.path.join(out, "budget.ods"))


def pdfs(out):
    c = canvas.Canvas(os.path.join(out, "hundred.pdf"), pagesize=A4)
    for p in range(1, 101):
        text = c.beginText(72, 770)
        text.setFont("Helvetica", 11)
        text.textLine(f"Page {p} heading: the quick brown fox")
        for line in range(45):
            text.textLine(f"Line {line} of page {p}: lorem ipsum dolor sit amet, consectetur {p * line}.")
        c.drawText(text)
        c.showPage()
    c.save()

    # Page 2 has only drawings: no text layer.
    c = canvas.Canvas(os.path.join(out, "scanned.pdf"), pagesize=A4)
    c.drawString(72, 770, "Text on the first page")
    c.showPage()
    c.rect(72, 400, 300, 200, fill=1)
    c.showPage()
    c.drawString(72, 770, "Text on the third page")
    c.showPage()
    c.save()

    c = canvas.Canvas(os.path.join(out, "locked.pdf"), encrypt="hunter2-user")
    c.drawString(72, 700, "Locked text")
    c.showPage()
    c.save()


def main():
    out = sys.argv[1]
    rows = int(sys.argv[sys.argv.index("--rows") + 1]) if "--rows" in sys.argv else 10_000
    os.makedirs(out, exist_ok=True)
    docx(out)
    docx_big_entry(out)
    docx_liar(out)
    zip_bomb(out)
    pptx(out)
    xlsx(out, rows)
    xls(out)
    ods(out)
    pdfs(out)


if __name__ == "__main__":
    main()

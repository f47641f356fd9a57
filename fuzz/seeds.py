#!/usr/bin/env python3
"""Writes fuzz/corpus-seed/<target>/: the committed seed corpora.

Seeds come from the repository's own samples/ (data written for this
project, cut down to a few KB) and small hand-made inputs; nothing from
../shared/fixtures. Run from anywhere: `python3 fuzz/seeds.py`. It replaces
the seed directories, so the output is reproducible.
"""

import json
import shutil
import struct
from pathlib import Path

FUZZ = Path(__file__).resolve().parent
ROOT = FUZZ.parent
SAMPLES = ROOT / "samples"
OUT = FUZZ / "corpus-seed"

seeds: dict[str, dict[str, bytes]] = {}


def seed(target: str, name: str, data: bytes | str) -> None:
    if isinstance(data, str):
        data = data.encode()
    seeds.setdefault(target, {})[name] = data


def head_lines(path: Path, n: int) -> bytes:
    """The first n lines of a sample (whole lines, so the CSV stays valid)."""
    return b"".join(path.read_bytes().splitlines(keepends=True)[:n])


# --- json_to_wit: values for the fuzz WIT's types and functions -------------
for name, value in {
    "point": {"x": 1, "y": -2},
    "nested": {
        "name": "n",
        "origin": {"x": 0, "y": 0},
        "tags": ["a", "b"],
        "color": "dark_blue",
        "shape": {"rect": {"x": 3, "y": 4}},
        "perms": ["read", "exec_all"],
        "pair": [7, "seven"],
        "maybe_count": None,
        "path": [{"x": 1, "y": 1}],
        "outcome": {"err": "bad"},
    },
    "nested-kebab": {
        "name": "",
        "origin": {"x": 2147483647, "y": -2147483648},
        "tags": [],
        "color": "dark-blue",
        "shape": "empty",
        "perms": [],
        "pair": [255, ""],
        "maybe-count": 4294967295,
        "path": [],
        "outcome": {"ok": 65535},
    },
    "ints": {"a": 255, "b": -128, "c": 65535, "d": -32768, "e": 4294967295,
             "f": -2147483648, "g": 18446744073709551615, "h": -9223372036854775808},
    "ints-float": {"a": 3.0, "b": -1.0, "c": 1e4, "d": 0.0, "e": 1e9, "f": -0.0,
                   "g": 1.8e19, "h": 9.2e18},
    "floats": {"single": 0.1, "double": -2.5e300, "singles": [3.4028234663852886e38, 1e-45, "NaN"],
               "doubles": ["Infinity", "-Infinity", 5e-324, 1.7976931348623157e308]},
    "misc": {"c": "😀", "flag": True, "text": "t\u0000\n", "bytes": [0, 255],
             "nested_opt": "x", "unit_result": {"ok": None}, "ok_only": {"ok": "y"},
             "err_only": {"err": "e"}, "numbers": [1, -1], "deep": [[[0.5, "c"]]],
             "quad": [1, 2, 3, 4]},
    "maps": {"by_name": {"a": 1, "b": 2}, "by_char": {"z": {"x": 1, "y": 2}},
             "by_int": [[1, "one"], [2, "two"]]},
    "shape-circle": {"circle": 1.5},
    "shape-named": {"named": "n"},
    "flags": {"perms": ["write"], "color": "red", "shape": "empty"},
    "option": {"value": None, "numbers": [9007199254740993]},
    "char": {"c": "a", "maybe": "ß"},
    "list": [{"circle": "NaN"}, "empty", {"rect": {"x": 1, "y": 2}}],
    "result": {"ok": {"x": 1, "y": 2}},
    "scalar-string": "green",
    "scalar-number": 1.5,
    "scalar-null": None,
    "scalar-bool": False,
    "empty-object": {},
}.items():
    seed("json_to_wit", name, json.dumps(value, ensure_ascii=False))

# --- ecuflash_xml: the sample definitions, and the decoder's test shapes -----
defs = SAMPLES / "ecu" / "definitions"
seed("ecuflash_xml", "sample-base.xml", (defs / "base" / "benchtop-sample-base.xml").read_bytes())
seed("ecuflash_xml", "sample-child.xml", (defs / "BT000001 2024 Benchtop Sample ECU.xml").read_bytes())
seed("ecuflash_xml", "shapes.xml", """<rom><romid><xmlid>t</xmlid><checksummodule>subarudbw</checksummodule></romid>
  <scaling name="u8" toexpr="x" frexpr="x" storagetype="uint8"/>
  <scaling name="half" units="deg" toexpr="x/2" frexpr="x*2" format="%.1f" storagetype="int8"/>
  <scaling name="le16" toexpr="x*1000/256" frexpr="x*256/1000" format="%04X" storagetype="uint16" endian="little"/>
  <scaling name="f" toexpr="x" format="%08.3e" storagetype="float"/>
  <scaling name="sw" storagetype="bloblist"><data name="off" value="00"/><data name="on" value="01"/></scaling>
  <scaling name="bits" storagetype="bloblist" storagebits="1"><data name="0" value="00"/><data name="1" value="01"/></scaling>
  <table name="Swapped" type="3D" swapxy="true" scaling="u8" address="a">
    <table name="X" type="X Axis" elements="3" scaling="u8" address="0"/>
    <table name="Y" type="Y Axis" elements="2" scaling="u8" address="4"/>
  </table>
  <table name="RowMajor" type="3D" scaling="half" address="14" category="Timing" level="2">
    <table name="X" type="X Axis" elements="3" scaling="le16" address="0"/>
    <table name="Y" type="Y Axis" elements="2" scaling="u8" address="4"/>
  </table>
  <table name="LE" type="1D" scaling="le16" address="1e"/>
  <table name="F" type="1D" scaling="f" address="0x40"/>
  <table name="Switch" type="1D" scaling="sw" address="20"/>
  <table name="Flags" type="2D" scaling="bits" address="22">
    <table type="Static Y Axis" elements="16"><data>a</data><data>b</data></table>
  </table>
  <table name="Dup" type="1D" scaling="u8" address="50"/>
  <table name="Dup" type="1D" scaling="u8" address="60"/>
</rom>
""")
seed("ecuflash_xml", "dtd.xml", """<?xml version="1.0"?>
<!DOCTYPE rom [<!ENTITY e "x*2">]>
<rom><romid><xmlid>d</xmlid></romid><include>base</include>
<scaling name="s" toexpr="&e;" storagetype="int16"/>
<table name="T" type="2D" scaling="s" address="100"><table name="A" type="Y Axis" elements="4" scaling="s" address="200"/></table>
</rom>
""")

# --- scaling_expr: expression, newline, printf format --------------------------
for i, (expr, fmt) in enumerate([
    ("x*1000/256", "%.0f"),
    ("14.7*128/x", "%.2f"),
    ("1.8*x-40", "%d"),
    ("(32768-x)*1000/256", "%04X"),
    ("100*(x-26)/(204)", "%08x"),
    ("-(x+1)*2", "%+.1f"),
    (" X * 2 ", "%-6.1f deg"),
    ("x*1e2", "%e"),
    ("x/1E-3+.5", "%g"),
    ("((x))", "%.0d"),
    ("--x", "%0f"),
    ("0.0078125*x", "-%.1f"),
    ("x+x+x+x+x+x+x+x+x+x", "%%%.3f%%"),
]):
    seed("scaling_expr", f"expr-{i:02}", f"{expr}\n{fmt}")

# --- filtrex: filters over the target's small log -----------------------------
for i, f in enumerate([
    "RPM > 3000 and Knock > 0",
    'Mode == "pull"',
    "'Boost (psi)' > 5",
    "abs(AFR - 14.7) < 0.5",
    "if RPM > 4000 then Load else 0",
    'Mode in ("idle", "cruise")',
    'Mode not in ("idle")',
    'Note ~= "kn.*"',
    "exists(Foo) or empty(Note)",
    "not (RPM < 1000) or Gear == 3",
    "RPM mod 1000 == 0",
    "round(Load) == 100 && Gear != 4 || !(Knock >= 1)",
    "min(RPM, 3000, Load) ^ 2 > 1e6",
    "sqrt(RPM) > 50 and log10(Load) <= 2 and ceil(AFR) >= floor(AFR)",
    "max(log(RPM), log2(Load)) > 10",
    "'2nd' * 2 - -Time / 0.05 > 3",
    "Gear == \"N\"",
    "Knock > 0 and RPM > 3000 and Load > 50 or AFR < 11",
    "Time >= 0.1 and Time <= 0.3",
]):
    seed("filtrex", f"filter-{i:02}", f)

# --- csv_log: byte 0 picks the file name (0 plain, 1 EvoScan, 2 RomRaider, 3 other)
logs = SAMPLES / "logs"
seed("csv_log", "plain", b"\x00" + head_lines(logs / "log-2026-02-22T14-30-00-000Z.csv", 40))
seed("csv_log", "evoscan", b"\x01" + head_lines(logs / "EvoScanDataLog_2026.02.22_10.15.00.csv", 30))
seed("csv_log", "romraider", b"\x02" + head_lines(logs / "romraiderlog_20260221_180000.csv", 40))
seed("csv_log", "romraider-clock-header-change", b"\x02" + b"""Time;Engine Speed (rpm);Boost (psi)
10:00:00.000;800;-10,5
10:00:00.050;850;-10,1
Time;Engine Speed (rpm);Boost (psi);Knock
10:00:00.100;900;-9,8;0
10:00:00.150;"1.250,5";-9,0;1
""")
seed("csv_log", "quoted-bom-crlf", b"\x03\xef\xbb\xbf" + b"""\r
"time (ms)","A ""quoted"" name",Text,Empty\r
0,"1,5",hello,\r
20,"2,000.25","a, b",\r
40,NaN,-,\r
60,1e3,  ,x,extra\r
""")

# Real loggers' layouts (written here, not copied from any user's log):
# preambles, units and alias rows, other encodings, an absolute clock.
seed("csv_log", "me7logger", b"\x03" + """#####################
Logfile created by ME7-Logger v1.20 (c) mki, 12/2010-07/2013

Logging with:    20 samples/second
Log started at:  22.02.2014 17:47:01.046

TimeStamp; nmot_w    ; dwkrz_0   ; fr_w
  sec.ms ; 1/min     ; \u00b0KW       ; -
"TIME";"EngineSpeed";"IgnitionRetardCyl1";""
    0.000; 800       ; 0         ; 0.978791
    0.050; 810       ; -0.75     ; 1.0029
""".encode())
seed("csv_log", "vcds", b"\x03" + b"""Sonntag,30,November,2014,14:45:17:29612,VCDS Version: Release 14.10.0
03L 906 018 JG,ADVMB,R4 2.0l TDI
,,G004,F0,G008,F0,

Marker,TIME,Loc. IDE00021,TIME,Loc. IDE00075
,STAMP,Engine speed,STAMP,Vehicle speed
,, /min,, km/h
,0.44,800,0.47,0
,0.96,810,0.98,5
""")
seed("csv_log", "logworks-units-row", b"\x03" + b"Session: Session 8,,,\r\ntime,LC1_O2WB,RPM,Boost\r\n(sec),(AFR),(RPM),(PSI)\r\n0.00000,14.74,1173,-7.48\r\n0.08192,14.80,1195,-7.48\r\n")
seed("csv_log", "cobb-windows-1252", b"\x03" + b"Time (sec),Coolant Temp (\xb0 F),AP Info:[AP3 v1.7][Reflash: x.ptm]\r\n0.000,115,0\r\n0.008,116,0\r\n")
seed("csv_log", "utf16le-bom", b"\x03" + "\ufeffTime,Temp (\u00b0C),RPM\n0.0,20,800\n0.5,21,810\n".encode("utf-16-le"))
seed("csv_log", "openport-absolute-clock", b"\x03" + b"sample,time,RPM\n0,102183.500,963.75\n1,102183.750,1605\n")

# --- cp1600_rom: byte 0 picks the format ---------------------------------------


def crc16(data: bytes) -> int:
    crc = 0xFFFF
    for b in data:
        crc ^= b << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) if crc & 0x8000 else (crc << 1)
            crc &= 0xFFFF
    return crc


def encode_rom(segments: list[tuple[int, list[int]]]) -> bytes:
    """cp1600::rom::encode_rom, byte for byte."""
    out = bytearray([0xA8, len(segments), len(segments) ^ 0xFF])
    attrs = [0] * 16
    fine = [0x07] * 32
    for addr, words in segments:
        lo = addr >> 8
        pages = max(1, -(-len(words) // 256))
        hi = min(255, lo + pages - 1)
        start = len(out)
        out += bytes([lo, hi])
        for i in range(pages * 256):
            out += struct.pack(">H", words[i] if i < len(words) else 0)
        out += struct.pack(">H", crc16(out[start:]))
        for page in range(lo, hi + 1):
            bank = page // 8
            attrs[bank // 2] |= 1 << (4 * (bank % 2))
            idx = (bank % 2) * 16 + bank // 2
            p = page % 8
            fine[idx] = (p << 4) | p if fine[idx] == 0x07 else (fine[idx] & 0xF0) | p
    start = len(out)
    out += bytes(attrs) + bytes(fine)
    out += struct.pack(">H", crc16(out[start:]))
    return bytes(out)


def words(b: bytes) -> list[int]:
    return [struct.unpack(">H", b[i:i + 2])[0] for i in range(0, len(b) - 1, 2)]


cp = SAMPLES / "cp1600"
hello = (cp / "01-hello-world.bin").read_bytes()
counter = (cp / "02-counter-loop.bin").read_bytes()
calls = (cp / "03-subroutine-call.bin").read_bytes()
seed("cp1600_rom", "rom-hello", b"\x00" + encode_rom([(0x5000, words(hello))]))
rom2 = bytearray(encode_rom([(0x5000, words(calls)), (0xD000, words(counter))]))
seed("cp1600_rom", "rom-two-segments-fix-crc", b"\x80" + bytes(rom2))
# A writable bank: attribute nibble 2 (write) for bank 1 ($0800), fine range 0..1.
ram = bytearray(encode_rom([(0x5000, words(hello))]))
tables = len(ram) - 50
ram[tables + 0] |= 0x20
ram[tables + 16 + 16 + 0] = 0x01
seed("cp1600_rom", "rom-ram-bank-fix-crc", b"\x80" + bytes(ram))
for f in sorted(cp.glob("*.bin")):
    seed("cp1600_rom", f"raw-{f.stem}", b"\x01\x50\x00" + f.read_bytes())
seed("cp1600_rom", "bin-default", b"\x02" + (cp / "04-bit-manipulation.bin").read_bytes())
bin_ = (cp / "05-signed-math.bin").read_bytes() + (cp / "06-nested-calls.bin").read_bytes()
cfg = (
    "; a .cfg for two programs in one .bin\n"
    "[mapping]\n"
    f"$0000 - ${len((cp / '05-signed-math.bin').read_bytes()) // 2 - 1:04X} = $5000\n"
    f"${len((cp / '05-signed-math.bin').read_bytes()) // 2:04X} - ${len(bin_) // 2 - 1:04X} = $D000 ; second\n"
    "[memattr]\n$8000 - $80FF = RAM 16\n$9000 - $90ff = wom 8\n"
    "[vars]\nname = \"x\"\n"
)
seed("cp1600_rom", "bin-cfg", b"\x03" + struct.pack(">H", len(bin_)) + bin_ + cfg.encode())

# --- mz_exe: byte 0 is options (bit 0 tracking, bit 1 an 8086) ---------------
dos = SAMPLES / "dos"
seed("mz_exe", "com-greet", b"\x00" + (dos / "greet.com").read_bytes())
seed("mz_exe", "com-sums-tracked", b"\x01" + (dos / "sums.com").read_bytes())


def mz(code: bytes, relocs: list[tuple[int, int]], ss=0x10, sp=0x100, extra=0x10) -> bytes:
    """A small MZ .EXE: 32-byte header (relocations inside it), then code."""
    header_paras = 2 + (len(relocs) * 4 + 15) // 16
    header_len = header_paras * 16
    size = header_len + len(code)
    h = struct.pack(
        "<2sHHHHHHHHHHHHH",
        b"MZ", size % 512, (size + 511) // 512, len(relocs), header_paras,
        extra, 0xFFFF, ss, sp, 0, 0, 0, 0x1C, 0,
    )
    h += b"".join(struct.pack("<HH", off, seg) for off, seg in relocs)
    h = h.ljust(header_len, b"\0")
    return h + code


# mov ax, SEG data (relocated) ; mov ds, ax ; mov dx, msg ; mov ah, 9 ; int 21h ;
# mov ax, 4c07h ; int 21h ; data: "MZ!$"
code = bytes([0xB8, 0x01, 0x00, 0x8E, 0xD8, 0xBA, 0x00, 0x00, 0xB4, 0x09, 0xCD, 0x21,
              0xB8, 0x07, 0x4C, 0xCD, 0x21]).ljust(16, b"\x90") + b"MZ!$"
seed("mz_exe", "exe-reloc", b"\x00" + mz(code, [(1, 0)]))
seed("mz_exe", "exe-reloc-8086-tracked", b"\x03" + mz(code, [(1, 0)]))
# call/ret, a loop, a far call through the PSP's INT 21h entry, file open (fails: no drive C:)
code2 = bytes([
    0xE8, 0x08, 0x00,              # call sub
    0xB9, 0x10, 0x00,              # mov cx, 16
    0xE2, 0xFE,                    # loop $
    0xEB, 0x08,                    # jmp over
    0x40, 0xC3,                    # sub: inc ax ; ret
    0x90, 0x90, 0x90, 0x90, 0x90, 0x90,
    0xBA, 0x30, 0x00,              # mov dx, name
    0xB8, 0x00, 0x3D,              # mov ax, 3d00h (open)
    0xCD, 0x21,
    0xF4,                          # hlt
]).ljust(0x30, b"\x90") + b"C:\\X.TXT\0"
seed("mz_exe", "exe-calls-open", b"\x01" + mz(code2, []))

# --- btsnoop -----------------------------------------------------------------
snoop = (SAMPLES / "ble-buffer" / "btsnoop_hci.log").read_bytes()
seed("btsnoop", "sample-h4", snoop)
seed("btsnoop", "sample-h4-truncated", snoop[:1000])


def record(flags: int, us: int, data: bytes) -> bytes:
    ts = us + 0x00DCDDB30F2F8000
    return struct.pack(">IIIIq", len(data), len(data), flags, 0, ts) + data


def acl(handle: int, pb: int, payload: bytes) -> bytes:
    return struct.pack("<HH", handle | (pb << 12), len(payload)) + payload


att_write = bytes([0x12]) + struct.pack("<H", 0x2A) + b"\xA7\xB3\x02"
att_notify = bytes([0x1B]) + struct.pack("<H", 0x2C) + bytes(range(30))
l2_write = struct.pack("<HH", len(att_write), 4) + att_write
l2_notify = struct.pack("<HH", len(att_notify), 4) + att_notify
mon = b"btsnoop\0" + struct.pack(">II", 1, 2001)
mon += record(4, 1_753_437_600_000_000, acl(0x40, 0, l2_write))
mon += record(5, 1_753_437_600_001_000, acl(0x40, 2, l2_notify[:12]))
mon += record(5, 1_753_437_600_002_000, acl(0x40, 1, l2_notify[12:]))
mon += record(5, 1_753_437_600_003_000, acl(0x40, 1, b"\x00"))
mon += record(2, 1_753_437_600_004_000, b"\x01\x03\x0c\x00")
seed("btsnoop", "monitor-fragments", mon)

# --- bridge_message ----------------------------------------------------------
for i, m in enumerate([
    '{"type":"log","timestamp":"2025-07-25T10:00:00.000Z","level":"info","message":"[TX] A7 B3 02 D9 82 37 00 00 A0 00"}',
    '{"type":"log","level":"info","message":"[BridgeServer] [RX] b3 a7 01"}',
    '{"type":"log","level":"info","message":"BLE connected","timestamp":"2025-07-25T10:00:00+02:00"}',
    '{"type":"log","level":"warn","message":"Connecting to CS108Reader2."}',
    '{"type":"log","level":"error","message":"BLE disconnected: timeout"}',
    '{"type":"data","data":[167,179,2],"timestamp":"2025-07-25T10:00:00.123456Z"}',
    '{"type":"connected","device":"CS108"}',
    '{"type":"disconnected"}',
    '{"type":"error","error":"no device"}',
    '{"type":"scan_result","devices":[{"id":"aa:bb","name":"CS108","rssi":-60},{"id":"cc"}]}',
    '{"type":"keepalive"}',
    "2025-07-25T10:00:00Z",
    "2024-02-29 23:59:60.5-12:30",
    "A7 B3 ?? 02",
    "30s",
    "id:1234",
    "last",
    "[RX]  0A",
]):
    seed("bridge_message", f"message-{i:02}", m)

# --- ws_frame: byte 0 is the chunk size - 1 -----------------------------------


def frame(op: int, payload: bytes, fin=True, mask: bytes | None = None) -> bytes:
    out = bytearray([(0x80 if fin else 0) | op])
    m = 0x80 if mask else 0
    n = len(payload)
    if n < 126:
        out.append(m | n)
    elif n <= 0xFFFF:
        out += bytes([m | 126]) + struct.pack(">H", n)
    else:
        out += bytes([m | 127]) + struct.pack(">Q", n)
    if mask:
        out += mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
    else:
        out += payload
    return bytes(out)


handshake = (
    b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
    b"Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n"
)
msg = b'{"type":"log","level":"info","message":"[TX] A7 B3"}'
seed("ws_frame", "handshake-text", b"\x06" + handshake + frame(1, msg))
seed("ws_frame", "fragmented-ping-close", b"\x00" + frame(1, msg[:10], fin=False)
     + frame(9, b"hi") + frame(0, msg[10:30], fin=False) + frame(0, msg[30:])
     + frame(8, struct.pack(">H", 1000) + b"bye"))
seed("ws_frame", "masked-binary-126", b"\x1f" + frame(2, bytes(range(256)) * 2, mask=b"\x01\x02\x03\x04")
     + frame(10, b""))
seed("ws_frame", "url-device", b"\x00ws://127.0.0.1:8080/?device=CS108&service=fff0&write=fff1&notify=fff2")
seed("ws_frame", "url-ipv6", b"\x00ws://[::1]:9000?command=log-stream")
seed("ws_frame", "bad-reserved", b"\x01" + bytes([0xC1, 0x00]))

# --- jsonrpc_framing: byte 0 = chunk size - 1 (bits 0-5), bit 6 = 200-byte line
# limit; the rest is what a client sends (stdio lines, or one HTTP body) ------


def rpc(id_, method: str, params=None) -> bytes:
    m = {"jsonrpc": "2.0", "method": method}
    if id_ is not None:
        m["id"] = id_
    if params is not None:
        m["params"] = params
    return json.dumps(m, separators=(",", ":")).encode()


initialize = rpc(0, "initialize", {
    "protocolVersion": "2025-06-18", "capabilities": {},
    "clientInfo": {"name": "fuzz", "version": "1.0"}})
call = rpc("c-1", "tools/call", {"name": "query_log", "arguments": {
    "path": "a.csv", "filter": "RPM > 3000 && Load < 1.5", "limit": 10, "flags": [True, None]}})
for name, body in {
    "initialize": initialize,
    "ping": rpc(1, "ping"),
    "tools-call": call,
    "tools-list": rpc(2, "tools/list", {"cursor": "x"}),
    "notification": rpc(None, "notifications/initialized"),
    "unknown-notification": rpc(None, "notifications/whatever", [1]),
    "response": b'{"jsonrpc":"2.0","id":3,"result":{}}',
    "error-response": b'{"jsonrpc":"2.0","id":4,"error":{"code":-1,"message":"no"}}',
    "batch": b"[" + rpc(1, "ping") + b"]",
    "id-float": b'{"jsonrpc":"2.0","id":1.5,"method":"ping"}',
    "id-1e400": b'{"jsonrpc":"2.0","id":1e400,"method":"ping"}',
    "jsonrpc-1": b'{"jsonrpc":"1.0","id":4,"method":"ping"}',
    "params-array": b'{"jsonrpc":"2.0","id":5,"method":"tools/call","params":[1]}',
    "method-number": b'{"jsonrpc":"2.0","id":6,"method":7}',
    "surrogate": b'{"jsonrpc":"2.0","id":"s","method":"ping","params":{"x":"\\ud800"}}',
    "escaped-id": b'{"id":"a\\"b\\u0041","jsonrpc":"2.0","method":"ping"}',
    "bad-utf8": b'{"jsonrpc":"2.0","id":3,"method":"ping","params":{"x":"\xff"}}',
    "deep": b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"a":' + b"[" * 130 + b"]" * 130 + b"}}",
    "truncated": initialize[:40],
    "scalar": b"42",
}.items():
    seed("jsonrpc_framing", f"body-{name}", b"\x3f" + body)
# stdio: several lines, some split by small reads, BOM and CRLF, blank lines.
seed("jsonrpc_framing", "lines-session", b"\x06" + b"\n".join([
    initialize, rpc(None, "notifications/initialized"), b"", rpc(1, "tools/list"), call]) + b"\n")
seed("jsonrpc_framing", "lines-crlf-bom", b"\x02\xef\xbb\xbf" + rpc(1, "ping") + b"\r\n  \r\n"
     + rpc("x", "ping") + b"\r\n")
seed("jsonrpc_framing", "lines-bad-mixed", b"\x00garbage\n" + rpc(2, "ping") + b"\n{\"id\":9,\n[1,2]\n")
# Over the 200-byte limit (bit 6): the id is read from the start of the line.
seed("jsonrpc_framing", "lines-oversized", b"\x47" + rpc(11, "tools/call", {"name": "x", "arguments": {
    "data": "A" * 300}}) + b"\n" + rpc(12, "ping") + b"\n")
seed("jsonrpc_framing", "lines-oversized-id-late", b"\x40" + b'{"jsonrpc":"2.0","params":{"pad":"'
     + b"B" * 150 + b'"},"id":123456789,"method":"ping"}\n')

# --- x86_snapshot, cp1600_snapshot: edits of a real snapshot -----------------
# (fuzz_targets/shared/edits.rs): the whole snapshot, one cut, a few flips.
for target in ("x86_snapshot", "cp1600_snapshot"):
    seed(target, "whole", struct.pack("<I", 0))
    seed(target, "cut-early", struct.pack("<I", 40))
    seed(target, "flips", struct.pack("<I", 0) + b"".join(
        struct.pack("<IB", at, 0xFF) for at in (8, 64, 200, 5000)))

# --- ecu_kept: what ecu-tables reads back from its cache directory -----------
# The first byte picks the reader (even: a folder index, odd: a resolved
# definition); the rest is the payload as kept.rs and remembered.rs write it.
def kstr(text):
    b = text.encode()
    return struct.pack("<H", len(b)) + b


def kopt(text):
    return b"\x00" if text is None else b"\x01" + kstr(text)


def kscaling(storage, to, choices=()):
    out = kopt("AFR") + bytes([storage, 0]) + kstr(to) + kopt("x/2") + kopt("AFR") + kopt("%.1f")
    out += b"\x01" + struct.pack("<d", -1.5) + b"\x00"
    out += struct.pack("<I", len(choices))
    for name, data in choices:
        out += kstr(name) + struct.pack("<I", len(data)) + data
    return out


index = kstr("/defs") + struct.pack("<QI", 7, 1) + kstr("ecuflash") + struct.pack("<Q", 42)
index += struct.pack("<I", 2)
# A file with one candidate (id bytes at 0x2000, a field, an include).
index += kstr("/defs/A.xml") + struct.pack("<QQI", 499, 1_700_000_000, 5) + struct.pack("<I", 0) + b"\x00"
index += b"\x02" + struct.pack("<I", 1) + kstr("0") + kstr("A2UG000N")
index += b"\x00" + struct.pack("<QI", 0x2000, 8) + b"A2UG000N"
index += struct.pack("<I", 1) + kstr("memmodel") + kstr("SH7058") + struct.pack("<I", 1) + kstr("BASE")
# A file no family claims, of a foreign format, never identified.
index += kstr("/defs/B.xml") + struct.pack("<QQI", 10, 1_700_000_000, 0) + struct.pack("<I", 0xFFFFFFFF) + b"\x01\x00"
seed("ecu_kept", "index", b"\x00" + index)
seed("ecu_kept", "index-cut", b"\x00" + index[:40])

table = kstr("Target Boost") + kopt("Boost") + struct.pack("<Q", 0xC1234) + kscaling(2, "x*0.1")
table += b"\x01" + kopt("RPM") + b"\x01" + struct.pack("<QI", 0xC1000, 16) + kscaling(6, "x") + b"\x01"
table += b"\x01" + kopt(None) + b"\x00" + struct.pack("<I", 2) + kstr("a") + kstr("b") + b"\x00"
table += b"\x01\x00\x01" + b"\x01" + struct.pack("<I", 3)
switch = kstr("Switch") + kopt(None) + struct.pack("<Q", 7) + kscaling(0, "x", [("on", b"\x01")])
switch += b"\x00\x00" + b"\x00\x00\x00" + b"\x00"
definition = struct.pack("<I", 1) + kstr("make") + kstr("Subaru")
definition += struct.pack("<I", 2) + kstr("32BITBASE") + kstr("A2UG000N")
definition += struct.pack("<I", 2) + table + switch
definition += struct.pack("<I", 1) + kstr("Odd") + kstr("no scaling") + b"\x00" + kstr("subarudbw")
seed("ecu_kept", "resolved", b"\x01" + definition)
seed("ecu_kept", "resolved-cut", b"\x01" + definition[:60])

# -----------------------------------------------------------------------------
for target, files in seeds.items():
    d = OUT / target
    if d.exists():
        shutil.rmtree(d)
    d.mkdir(parents=True)
    for name, data in files.items():
        (d / name).write_bytes(data)
    total = sum(len(b) for b in files.values())
    print(f"{target:16} {len(files):3} seeds {total:7} bytes")

// SPDX-License-Identifier: MIT
// The nvidia-smi parser on real recorded outputs (tests/data/nvidia-smi/, sources in tests/data/README.md) and
// on messy inputs: every case is also fed split at every byte, and one byte at a time.
#include "core/nvidiasmi.h"

#include <QDateTime>
#include <QFile>
#include <QTest>

using namespace rankscope;

namespace {

QByteArray recorded(const QString& name) {
    QFile file(QStringLiteral(RANKSCOPE_TEST_DATA_DIR "/nvidia-smi/") + name);
    return file.open(QIODevice::ReadOnly) ? file.readAll() : QByteArray();
}

// "index|name|bus|time|util=..|mem=used/total|temp=..|power=draw/limit", "-" for no reading.
QString describe(const GpuSample& s) {
    const auto v = [](double x) { return GpuSample::has(x) ? QString::number(x) : QStringLiteral("-"); };
    const QString time =
        GpuSample::has(s.time)
            ? QDateTime::fromMSecsSinceEpoch(qRound64(s.time * 1000), Qt::UTC).toString(Qt::ISODateWithMs)
            : QStringLiteral("-");
    return QStringLiteral("%1|%2|%3|%4|util=%5|mem=%6/%7|temp=%8|power=%9/")
               .arg(s.index)
               .arg(s.name, s.busId, time, v(s.utilizationPercent), v(s.memoryUsedMiB), v(s.memoryTotalMiB),
                    v(s.temperatureC), v(s.powerWatts)) +
           v(s.powerLimitWatts);
}

QStringList describeAll(const QVector<GpuSample>& samples) {
    QStringList out;
    for (const GpuSample& sample : samples)
        out << describe(sample);
    return out;
}

struct Result {
    QStringList samples;
    int skipped = 0;
};

Result parseInChunks(const QByteArray& input, const QStringList& fields, const QVector<qsizetype>& cuts) {
    NvidiaSmiParser parser(fields);
    QVector<GpuSample> all;
    qsizetype at = 0;
    for (const qsizetype cut : cuts) {
        all += parser.feed(QByteArrayView(input).sliced(at, cut - at));
        at = cut;
    }
    all += parser.feed(QByteArrayView(input).sliced(at));
    all += parser.finish();
    return {describeAll(all), parser.skippedLines()};
}

// A second GPU block, as the 470 driver's table separates GPUs (a "+---" rule between blocks).
QByteArray twoGpuTable() {
    QByteArray table = recorded(QStringLiteral("table-470-a10g.txt"));
    const QByteArray block = "|   1  NVIDIA A10G         On   | 00000000:00:1F.0 Off |                    0 |\n"
                             "|  0%   31C    P0    62W / 300W |   9000MiB / 22731MiB |     87%      Default |\n"
                             "|                               |                      |                  N/A |\n"
                             "+-------------------------------+----------------------+----------------------+\n";
    const qsizetype end = table.indexOf("+---", table.indexOf("|   0  NVIDIA"));
    const qsizetype after = table.indexOf('\n', end) + 1;
    table.insert(after, block);
    return table;
}

} // namespace

class tst_NvidiaSmi final : public QObject {
    Q_OBJECT

private slots:
    void parses_data() {
        QTest::addColumn<QByteArray>("input");
        QTest::addColumn<QStringList>("fields"); // for output without a header
        QTest::addColumn<QStringList>("expected");
        QTest::addColumn<int>("skipped");

        QTest::newRow("recorded csv, units, name first, no index")
            << recorded(QStringLiteral("csv-bpytop-gtx1080ti-gtx1060.csv")) << QStringList()
            << QStringList{"-1|GeForce GTX 1080 Ti||-|util=36|mem=2856/11175|temp=60|power=106.56/-",
                           "-1|GeForce GTX 1060 6GB||-|util=0|mem=4/6078|temp=49|power=5.68/-"}
            << 0;
        QTest::newRow("recorded csv, timestamp, bus id, [N/A]")
            << recorded(QStringLiteral("csv-forum-timestamp-busid-na.csv")) << QStringList()
            << QStringList{"0||00000000:01:00.0|2022-06-30T15:11:58.136Z|util=5|mem=-/-|temp=39|power=3.29/-"} << 0;
        QTest::newRow("recorded table 470")
            << recorded(QStringLiteral("table-470-a10g.txt")) << QStringList()
            << QStringList{"0|NVIDIA A10G|00000000:00:1E.0|2024-09-03T23:10:20.000Z|util=0|mem=0/22731|temp=25|"
                           "power=9/300"}
            << 0;
        QTest::newRow("recorded table 535")
            << recorded(QStringLiteral("table-535-a10g.txt")) << QStringList()
            << QStringList{"0|NVIDIA A10G|00000000:00:1E.0|2025-05-22T04:11:56.000Z|util=0|mem=8722/23028|temp=26|"
                           "power=60/300"}
            << 0;
        QTest::newRow("recorded table 550")
            << recorded(QStringLiteral("table-550-tesla-p4.txt")) << QStringList()
            << QStringList{"0|Tesla P4|00000000:86:00.0|2025-01-12T16:15:58.000Z|util=6|mem=7719/8192|temp=49|"
                           "power=24/75"}
            << 0;
        QTest::newRow("recorded table 570")
            << recorded(QStringLiteral("table-570-l4.txt")) << QStringList()
            << QStringList{"0|NVIDIA L4|00000000:31:00.0|2025-06-24T01:54:13.000Z|util=0|mem=0/23034|temp=36|"
                           "power=16/72"}
            << 0;
        QTest::newRow("two tables in a row (nvidia-smi -l)")
            << recorded(QStringLiteral("table-570-l4.txt")) + recorded(QStringLiteral("table-550-tesla-p4.txt"))
            << QStringList()
            << QStringList{"0|NVIDIA L4|00000000:31:00.0|2025-06-24T01:54:13.000Z|util=0|mem=0/23034|temp=36|"
                           "power=16/72",
                           "0|Tesla P4|00000000:86:00.0|2025-01-12T16:15:58.000Z|util=6|mem=7719/8192|temp=49|"
                           "power=24/75"}
            << 0;
        QTest::newRow("table with two GPU blocks")
            << twoGpuTable() << QStringList()
            << QStringList{"0|NVIDIA A10G|00000000:00:1E.0|2024-09-03T23:10:20.000Z|util=0|mem=0/22731|temp=25|"
                           "power=9/300",
                           "1|NVIDIA A10G|00000000:00:1F.0|2024-09-03T23:10:20.000Z|util=87|mem=9000/22731|temp=31|"
                           "power=62/300"}
            << 0;
        QTest::newRow("the supervisor's query, -lms, two GPUs, two rounds")
            << QByteArray("timestamp, index, name, pci.bus_id, utilization.gpu [%], memory.used [MiB], memory.total "
                          "[MiB], temperature.gpu, power.draw [W], power.limit [W]\n"
                          "2024/01/15 10:23:45.123, 0, NVIDIA A100-SXM4-40GB, 00000000:07:00.0, 35 %, 1234 MiB, "
                          "40960 MiB, 45, 85.23 W, 400.00 W\n"
                          "2024/01/15 10:23:45.125, 1, NVIDIA A100-SXM4-40GB, 00000000:0F:00.0, 0 %, 4 MiB, 40960 MiB, "
                          "33, [N/A], 400.00 W\n"
                          "2024/01/15 10:23:46.124, 0, NVIDIA A100-SXM4-40GB, 00000000:07:00.0, 99 %, 30000 MiB, "
                          "40960 MiB, 61, 390.5 W, 400.00 W\n")
            << QStringList()
            << QStringList{"0|NVIDIA A100-SXM4-40GB|00000000:07:00.0|2024-01-15T10:23:45.123Z|util=35|mem=1234/40960|"
                           "temp=45|power=85.23/400",
                           "1|NVIDIA A100-SXM4-40GB|00000000:0F:00.0|2024-01-15T10:23:45.125Z|util=0|mem=4/40960|"
                           "temp=33|power=-/400",
                           "0|NVIDIA A100-SXM4-40GB|00000000:07:00.0|2024-01-15T10:23:46.124Z|util=99|mem=30000/40960|"
                           "temp=61|power=390.5/400"}
            << 0;
        QTest::newRow("noheader,nounits with the query's fields")
            << QByteArray("3, 250.00, 12, 512, 16384\n")
            << QStringList{"index", "power.draw", "utilization.gpu", "memory.used", "memory.total"}
            << QStringList{"3|||-|util=12|mem=512/16384|temp=-|power=250/-"} << 0;
        QTest::newRow("noheader without fields: nothing to map")
            << QByteArray("3, 250.00, 12\n") << QStringList() << QStringList() << 1;
        QTest::newRow("[Not Supported], index last, CRLF, no final newline")
            << QByteArray("utilization.gpu [%], memory.used [MiB], power.draw [W], index\r\n"
                          "[Not Supported], 1000 MiB, [Not Supported], 0\r\n"
                          "[N/A], [N/A], [N/A], 1")
            << QStringList()
            << QStringList{"0|||-|util=-|mem=1000/-|temp=-|power=-/-", "1|||-|util=-|mem=-/-|temp=-|power=-/-"} << 0;
        QTest::newRow("restarted sampler: a second header with other columns")
            << QByteArray("index, utilization.gpu [%]\n0, 10 %\n"
                          "utilization.gpu [%], index, power.draw [W]\n20 %, 0, 100.5 W\n")
            << QStringList()
            << QStringList{"0|||-|util=10|mem=-/-|temp=-|power=-/-", "0|||-|util=20|mem=-/-|temp=-|power=100.5/-"} << 0;
        QTest::newRow("error lines and stray rows are skipped")
            << QByteArray("No devices were found\n"
                          "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure "
                          "that the latest NVIDIA driver is installed and running.\n"
                          "index, utilization.gpu [%]\n"
                          "\n"
                          "Unable to determine the device handle for GPU0000:01:00.0: GPU is lost.\n"
                          "x, 5 %\n"
                          "0, 5 %, 7\n"
                          "  0 ,  42 %  \n")
            << QStringList() << QStringList{"0|||-|util=42|mem=-/-|temp=-|power=-/-"} << 5;
        QTest::newRow("GPU row cut short after the memory cell (found by fuzzing)")
            << recorded(QStringLiteral("table-550-tesla-p4.txt"))
                   .replace("|    7719MiB /   8192MiB |      6%      Default |", "|    7719MiB /   8192MiB |")
            << QStringList()
            << QStringList{"0|Tesla P4|00000000:86:00.0|2025-01-12T16:15:58.000Z|util=-|mem=7719/8192|temp=49|"
                           "power=24/75"}
            << 0;
        QTest::newRow("timestamps with and without milliseconds, a name not given")
            << QByteArray("timestamp, name, index, utilization.gpu [%]\n"
                          "2024/01/15 10:23:45, [N/A], 0, 5 %\n"
                          "2024/01/15 10:23:46.250, NVIDIA L4, 0, 6 %\n")
            << QStringList()
            << QStringList{"0|||2024-01-15T10:23:45.000Z|util=5|mem=-/-|temp=-|power=-/-",
                           "0|NVIDIA L4||2024-01-15T10:23:46.250Z|util=6|mem=-/-|temp=-|power=-/-"}
            << 0;
        QTest::newRow("power.draw and its average: the first power column is the draw")
            << QByteArray(
                   "index, power.draw [W], power.draw.average [W], power.limit [W]\n0, 310.5 W, 250.0 W, 400 W\n")
            << QStringList() << QStringList{"0|||-|util=-|mem=-/-|temp=-|power=310.5/400"} << 0;
        QTest::newRow("no index column: each bus id keeps the index it was first given")
            << QByteArray("pci.bus_id, utilization.gpu [%]\n00000000:07:00.0, 1 %\n00000000:0F:00.0, 2 %\n"
                          "00000000:07:00.0, 3 %\n00000000:0F:00.0, 4 %\n")
            << QStringList()
            << QStringList{"0||00000000:07:00.0|-|util=1|mem=-/-|temp=-|power=-/-",
                           "1||00000000:0F:00.0|-|util=2|mem=-/-|temp=-|power=-/-",
                           "0||00000000:07:00.0|-|util=3|mem=-/-|temp=-|power=-/-",
                           "1||00000000:0F:00.0|-|util=4|mem=-/-|temp=-|power=-/-"}
            << 0;
        QTest::newRow("empty") << QByteArray() << QStringList() << QStringList() << 0;
    }

    void parses() {
        QFETCH(QByteArray, input);
        QFETCH(QStringList, fields);
        QFETCH(QStringList, expected);
        QFETCH(int, skipped);
        QVERIFY(!input.isNull() || expected.isEmpty());

        const Result whole = parseInChunks(input, fields, {});
        QCOMPARE(whole.samples, expected);
        QCOMPARE(whole.skipped, skipped);
        for (qsizetype cut = 0; cut <= input.size(); ++cut) {
            const Result split = parseInChunks(input, fields, {cut});
            if (split.samples != expected || split.skipped != skipped)
                QFAIL(qPrintable(QStringLiteral("split at byte %1: %2").arg(cut).arg(split.samples.join(" ; "))));
        }
        QVector<qsizetype> everyByte;
        for (qsizetype cut = 1; cut < input.size(); ++cut)
            everyByte << cut;
        const Result bytewise = parseInChunks(input, fields, everyByte);
        QCOMPARE(bytewise.samples, expected);
        QCOMPARE(bytewise.skipped, skipped);
    }

    void keepsOnlyTheUnfinishedLine() {
        NvidiaSmiParser parser;
        QVERIFY(parser.feed("index, utilization.gpu [%]\n0, 5 %\n0, 6").size() == 1);
        QCOMPARE(parser.bufferedBytes(), 4);
        QCOMPARE(parser.feed(" %\n").size(), 1);
        QCOMPARE(parser.bufferedBytes(), 0);
    }

    void queryFieldsMapEveryColumn() {
        NvidiaSmiParser parser(nvidiaSmiQueryFields());
        const QVector<GpuSample> samples = parser.feed(
            "2024/01/15 10:23:45.123, 2, NVIDIA H100 80GB HBM3, 00000000:18:00.0, 71, 60000, 81559, 52, 512.3, 700\n");
        QCOMPARE(
            describeAll(samples),
            QStringList{"2|NVIDIA H100 80GB HBM3|00000000:18:00.0|2024-01-15T10:23:45.123Z|util=71|mem=60000/81559|"
                        "temp=52|power=512.3/700"});
    }
};

QTEST_GUILESS_MAIN(tst_NvidiaSmi)
#include "tst_nvidiasmi.moc"

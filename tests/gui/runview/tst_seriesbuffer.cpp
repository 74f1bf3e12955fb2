// SPDX-License-Identifier: MIT
// downsample() and SeriesBuffer: bounded output, extremes kept, x order kept.
#include "seriesbuffer.h"

#include <QRandomGenerator>
#include <QtTest>

#include <algorithm>
#include <atomic>
#include <memory>
#include <thread>

using namespace rankscope::gui;

namespace {

QVector<QPointF> noisy(int count, quint32 seed) {
    QRandomGenerator random(seed);
    QVector<QPointF> points;
    points.reserve(count);
    for (int i = 0; i < count; ++i)
        points.append(QPointF(i, random.bounded(1.0)));
    return points;
}

bool xOrdered(const QVector<QPointF>& points) {
    return std::is_sorted(points.begin(), points.end(),
                          [](const QPointF& a, const QPointF& b) { return a.x() < b.x(); });
}

} // namespace

class TestSeriesBuffer final : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void downsampleBoundsKeepsExtremesAndOrder_data() {
        QTest::addColumn<int>("count");
        QTest::addColumn<int>("columns");
        QTest::newRow("100k into 800") << 100000 << 800;
        QTest::newRow("100k into 1") << 100000 << 1;
        QTest::newRow("5k into 333") << 5000 << 333;
    }

    void downsampleBoundsKeepsExtremesAndOrder() {
        QFETCH(int, count);
        QFETCH(int, columns);
        QVector<QPointF> points = noisy(count, 7);
        points[count / 3].setY(50.0);  // a spike
        points[count / 2].setY(-50.0); // a dip
        const QVector<QPointF> out = downsample(points, 0, count - 1, columns);
        QVERIFY2(out.size() <= 2 * columns + 4, qPrintable(QString::number(out.size())));
        QVERIFY(out.size() >= std::min(count, columns));
        QVERIFY(xOrdered(out));
        QVERIFY(out.contains(points[count / 3]));
        QVERIFY(out.contains(points[count / 2]));
        QCOMPARE(out.constFirst(), points.constFirst());
        QCOMPARE(out.constLast(), points.constLast());
        // Every output point is an input point.
        for (const QPointF& p : out)
            QCOMPARE(points[int(p.x())], p);
    }

    // A point on a column's edge by rounding ((x - xMin) / width just below an integer, while the column's end
    // computed back is x itself) once made downsample loop forever: the app froze mid-run at 100 % CPU, on the
    // throughput chart of a 600-step axis 132 pixel columns wide. Every axis and width of a sweep ends, bounded.
    void downsampleEndsOnEveryColumnEdge() {
        auto finished = std::make_shared<std::atomic<int>>(0);
        auto failures = std::make_shared<std::atomic<int>>(0);
        std::thread sweep([finished, failures] {
            for (const int xMax : {600, 1000, 1600, 4200}) {
                QVector<QPointF> points;
                for (int x = 0; x <= xMax; ++x)
                    points.append(QPointF(x, x % 7));
                for (int columns = 50; columns <= 500; ++columns) {
                    const QVector<QPointF> out = downsample(points, 0, xMax, columns);
                    if (out.size() > 2 * columns + 4 || !xOrdered(out) || out.constFirst() != points.constFirst() ||
                        out.constLast() != points.constLast())
                        ++*failures;
                }
            }
            *finished = 1;
        });
        sweep.detach(); // a sweep that never ends is the failure: it must not hang the test
        QElapsedTimer waited;
        waited.start();
        while (finished->load() == 0 && waited.elapsed() < 20000)
            QTest::qWait(20);
        QVERIFY2(finished->load() == 1, "downsample did not end within 20 s");
        QCOMPARE(failures->load(), 0);
    }

    void downsampleKeepsSmallInputAndSelectsRange() {
        const QVector<QPointF> points = noisy(100, 3);
        QCOMPARE(downsample(points, 0, 99, 800), points);
        // The range plus one neighbour on each side.
        const QVector<QPointF> part = downsample(points, 10, 20, 800);
        QCOMPARE(part, points.mid(9, 13));
        const QVector<QPointF> many = noisy(100000, 5);
        const QVector<QPointF> window = downsample(many, 50000, 60000, 100);
        QVERIFY(window.size() <= 204);
        QCOMPARE(window.constFirst().x(), 49999.0);
        QCOMPARE(window.constLast().x(), 60001.0);
        QVERIFY(xOrdered(window));
    }

    void bufferIsBoundedAndKeepsSpikes() {
        SeriesBuffer buffer(1000);
        QVector<QPointF> points = noisy(200000, 11);
        points[1234].setY(99.0);
        points[150000].setY(-99.0);
        quint64 revision = buffer.revision();
        for (const QPointF& p : points) {
            buffer.append(p);
            QVERIFY(buffer.size() <= 1000);
        }
        QVERIFY(buffer.revision() != revision);
        QCOMPARE(buffer.appendedCount(), 200000);
        QVERIFY(buffer.points().contains(points[1234]));
        QVERIFY(buffer.points().contains(points[150000]));
        QCOMPARE(buffer.maxY(), 99.0);
        QCOMPARE(buffer.minY(), -99.0);
        QVERIFY(xOrdered(buffer.points()));
        QCOMPARE(buffer.points().constLast(), points.constLast()); // the newest at full resolution
        QCOMPARE(buffer.points().constFirst().x(), 0.0);           // the oldest still there
        // The newest quarter of the capacity is untouched.
        QCOMPARE(buffer.points().mid(buffer.size() - 250), points.mid(points.size() - 250));
    }

    // The next run starts from nothing: clear() forgets the last run's points, its y range and its count.
    void clearForgetsTheYRange() {
        SeriesBuffer buffer;
        buffer.append({QPointF(1, 5.0), QPointF(2, -5.0)});
        const quint64 revision = buffer.revision();
        buffer.clear();
        QVERIFY(buffer.revision() != revision);
        buffer.append(QPointF(1, 1.0));
        QCOMPARE(buffer.minY(), 1.0);
        QCOMPARE(buffer.maxY(), 1.0);
        QCOMPARE(buffer.appendedCount(), 1);
    }

    // A smaller capacity (a shorter window chosen mid-run) compacts what is there at once: bounded, the newest at
    // full resolution, the first point and the spikes kept. Never below 16.
    void aSmallerCapacityCompactsAtOnce() {
        SeriesBuffer buffer(1000);
        QVector<QPointF> points = noisy(1000, 5);
        points[123].setY(42.0);
        buffer.append(points);
        QCOMPARE(buffer.size(), 1000);
        const quint64 revision = buffer.revision();
        buffer.setCapacity(100);
        QCOMPARE(buffer.capacity(), 100);
        QVERIFY2(buffer.size() <= 100, qPrintable(QString::number(buffer.size())));
        QVERIFY(buffer.revision() != revision);
        QVERIFY(buffer.points().contains(points[123]));
        QCOMPARE(buffer.points().constFirst(), points.constFirst());
        QCOMPARE(buffer.points().constLast(), points.constLast());
        QCOMPARE(buffer.points().mid(buffer.size() - 25), points.mid(points.size() - 25)); // the newest untouched
        QVERIFY(xOrdered(buffer.points()));
        buffer.setCapacity(3);
        QCOMPARE(buffer.capacity(), 16);
        QVERIFY(buffer.size() <= 16);
    }

    void bufferSkipsNonFinite() {
        SeriesBuffer buffer;
        buffer.append(QPointF(1, qQNaN()));
        buffer.append(QPointF(2, qInf()));
        buffer.append(QPointF(3, 1.0));
        QCOMPARE(buffer.size(), 1);
        buffer.clear();
        QVERIFY(buffer.isEmpty());
    }
};

QTEST_GUILESS_MAIN(TestSeriesBuffer)
#include "tst_seriesbuffer.moc"

// SPDX-License-Identifier: MIT
#include "runviewerwindow.h"

#include "core/eventfile.h"

#include <rankscope/event_schema.h>

#include <QChartView>
#include <QFileDialog>
#include <QHeaderView>
#include <QLineSeries>
#include <QMenuBar>
#include <QSplitter>
#include <QStatusBar>
#include <QTableWidget>
#include <QValueAxis>

#include <cmath>

namespace rankscope::gui {
namespace {

QString statusText(const RankState& state) {
    switch (state.status) {
    case RankStatus::FinishedOk:
        return QStringLiteral("finished");
    case RankStatus::Failed:
        return QStringLiteral("failed");
    case RankStatus::Running:
        break;
    }
    return state.started ? QStringLiteral("running") : QStringLiteral("starting");
}

QString optionalNumber(const std::optional<double>& value, int precision) {
    return value ? QString::number(*value, 'f', precision) : QStringLiteral("–");
}

} // namespace

RunViewerWindow::RunViewerWindow(QWidget* parent) : QMainWindow(parent) {
    setWindowTitle(QStringLiteral("RankScope"));
    auto* file = menuBar()->addMenu(tr("&File"));
    file->addAction(tr("&Open event files…"), QKeySequence::Open, this, &RunViewerWindow::chooseFiles);
    file->addAction(tr("&Quit"), QKeySequence::Quit, this, &QWidget::close);

    m_chart = new QChart;
    m_chart->setTitle(tr("Loss per rank"));
    m_stepAxis = new QValueAxis;
    m_stepAxis->setTitleText(tr("step"));
    m_stepAxis->setLabelFormat(QStringLiteral("%d"));
    m_lossAxis = new QValueAxis;
    m_lossAxis->setTitleText(tr("loss"));
    m_chart->addAxis(m_stepAxis, Qt::AlignBottom);
    m_chart->addAxis(m_lossAxis, Qt::AlignLeft);
    auto* chartView = new QChartView(m_chart);
    chartView->setRenderHint(QPainter::Antialiasing);

    m_ranks = new QTableWidget(0, 8);
    m_ranks->setHorizontalHeaderLabels(
        {tr("rank"), tr("host"), tr("state"), tr("epoch"), tr("step"), tr("loss"), tr("images/s"), tr("val accuracy")});
    m_ranks->horizontalHeader()->setSectionResizeMode(QHeaderView::Stretch);
    m_ranks->verticalHeader()->hide();
    m_ranks->setEditTriggers(QAbstractItemView::NoEditTriggers);

    auto* splitter = new QSplitter(Qt::Vertical);
    splitter->addWidget(chartView);
    splitter->addWidget(m_ranks);
    splitter->setStretchFactor(0, 3);
    splitter->setStretchFactor(1, 1);
    splitter->setSizes({520, 160}); // the table's size hint would otherwise squeeze the chart
    setCentralWidget(splitter);
    statusBar()->showMessage(tr("Open the event files of a run (File > Open)"));
    resize(1000, 700);
}

QString RunViewerWindow::openEventFiles(const QStringList& paths) {
    m_summary = RunSummary();
    m_lossByRank.clear();
    for (const QString& path : paths) {
        const auto error = readEventFile(path, [this](const ParsedBatch& batch) {
            for (const TrainerEvent& event : batch.events) {
                m_summary.add(event);
                if (event.type == TrainerEventType::Step)
                    m_lossByRank[event.rank].append(
                        QPointF(double(event.integer(schema::step::kStep)), event.number(schema::step::kLoss)));
            }
        });
        if (error)
            return *error;
    }
    refresh();
    statusBar()->showMessage(tr("%n event(s) from %1 file(s)", nullptr, int(m_summary.eventCount())).arg(paths.size()));
    return {};
}

void RunViewerWindow::chooseFiles() {
    const QStringList paths = QFileDialog::getOpenFileNames(this, tr("Event files of one run"), {},
                                                            tr("Event streams (*.events *.out *.log);;All files (*)"));
    if (!paths.isEmpty())
        if (const QString error = openEventFiles(paths); !error.isEmpty())
            statusBar()->showMessage(error);
}

void RunViewerWindow::refresh() {
    m_chart->removeAllSeries();
    double maxStep = 1, maxLoss = 0;
    for (auto it = m_lossByRank.cbegin(); it != m_lossByRank.cend(); ++it) {
        auto* series = new QLineSeries;
        series->setName(tr("rank %1").arg(it.key()));
        QVector<QPointF> finite;
        for (const QPointF& p : it.value())
            if (std::isfinite(p.y()))
                finite.append(p);
        for (const QPointF& p : finite) {
            maxStep = std::max(maxStep, p.x());
            maxLoss = std::max(maxLoss, p.y());
        }
        m_chart->addSeries(series);
        series->attachAxis(m_stepAxis);
        series->attachAxis(m_lossAxis);
        series->replace(finite); // one update for the whole series, never point by point
    }
    m_stepAxis->setRange(0, maxStep);
    m_lossAxis->setRange(0, maxLoss * 1.05 + 1e-9);

    const auto& ranks = m_summary.ranks();
    m_ranks->setRowCount(int(ranks.size()));
    int row = 0;
    for (const RankState& s : ranks) {
        const QStringList cells{QString::number(s.rank),
                                s.host,
                                statusText(s),
                                QString::number(s.epoch),
                                QString::number(s.step),
                                optionalNumber(s.loss, 4),
                                optionalNumber(s.endImagesPerSec ? s.endImagesPerSec : s.imagesPerSec, 0),
                                optionalNumber(s.valAccuracy, 4)};
        for (int column = 0; column < cells.size(); ++column)
            m_ranks->setItem(row, column, new QTableWidgetItem(cells[column]));
        ++row;
    }
}

} // namespace rankscope::gui

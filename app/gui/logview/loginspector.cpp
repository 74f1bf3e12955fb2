// SPDX-License-Identifier: MIT
#include "logview/loginspector.h"

#include "logview/logcollapsemodel.h"
#include "logview/logfilterproxy.h"
#include "logview/logmodel.h"
#include "core/ranklist.h"

#include <QAction>
#include <QApplication>
#include <QCheckBox>
#include <QClipboard>
#include <QComboBox>
#include <QFileDialog>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QLocale>
#include <QMenu>
#include <QPushButton>
#include <QSaveFile>
#include <QScrollBar>
#include <QStyle>
#include <QTimer>
#include <QToolButton>
#include <QTreeView>
#include <QVBoxLayout>

#include <algorithm>
#include <memory>
#include <set>
#include <tuple>

namespace rankscope::gui {
namespace {

constexpr int kPatternDelayMs = 150; // typing a pattern re-filters once the user pauses
const QString kInvalidStyle = QStringLiteral("QLineEdit { color: #b71c1c; background: #fdecea; }");

} // namespace

LogInspector::LogInspector(QWidget* parent)
    : QWidget(parent), m_model(new LogModel(this)), m_proxy(new LogFilterProxy(this)),
      m_collapse(new LogCollapseModel(this)) {
    m_proxy->setSourceModel(m_model);

    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(6, 6, 6, 4);
    layout->setSpacing(4);
    auto* bar = new QWidget(this);
    buildToolbar(bar);
    layout->addWidget(bar);

    m_patternError = new QLabel(this);
    m_patternError->setObjectName(QStringLiteral("patternError"));
    m_patternError->setStyleSheet(QStringLiteral("color: #b71c1c;"));
    m_patternError->hide();
    layout->addWidget(m_patternError);

    m_view = new QTreeView(this);
    m_view->setUniformRowHeights(true); // constant-time layout for hundreds of thousands of rows
    m_view->setRootIsDecorated(false);
    m_view->setAllColumnsShowFocus(true);
    m_view->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_view->setSelectionMode(QAbstractItemView::ExtendedSelection);
    m_view->setTextElideMode(Qt::ElideRight);
    m_view->setContextMenuPolicy(Qt::CustomContextMenu);
    layout->addWidget(m_view, 1);
    setViewModel();

    m_status = new QLabel(this);
    m_status->setObjectName(QStringLiteral("status"));
    m_status->setTextInteractionFlags(Qt::TextSelectableByMouse);
    layout->addWidget(m_status);

    auto* scrollBar = m_view->verticalScrollBar();
    connect(scrollBar, &QScrollBar::rangeChanged, this, [this] {
        if (m_following)
            scrollToEnd();
    });
    // Any scroll the user makes decides: at the bottom follows, anywhere else does not.
    connect(scrollBar, &QScrollBar::valueChanged, this,
            [this, scrollBar](int value) { setFollowing(value >= scrollBar->maximum()); });
    connect(m_view, &QWidget::customContextMenuRequested, this, &LogInspector::showContextMenu);

    for (QAbstractItemModel* model :
         {static_cast<QAbstractItemModel*>(m_model), static_cast<QAbstractItemModel*>(m_proxy)}) {
        connect(model, &QAbstractItemModel::rowsInserted, this, &LogInspector::updateStatus);
        connect(model, &QAbstractItemModel::rowsRemoved, this, &LogInspector::updateStatus);
        connect(model, &QAbstractItemModel::modelReset, this, &LogInspector::updateStatus);
        connect(model, &QAbstractItemModel::layoutChanged, this, &LogInspector::updateStatus);
    }
    updateStatus();
}

LogInspector::~LogInspector() = default;

void LogInspector::buildToolbar(QWidget* bar) {
    auto* row = new QHBoxLayout(bar);
    row->setContentsMargins(0, 0, 0, 0);
    row->setSpacing(6);

    row->addWidget(new QLabel(tr("Ranks"), bar));
    m_rankEdit = new QLineEdit(bar);
    m_rankEdit->setObjectName(QStringLiteral("ranks"));
    m_rankEdit->setPlaceholderText(tr("all, or 0-3,7"));
    m_rankEdit->setClearButtonEnabled(true);
    m_rankEdit->setMaximumWidth(130);
    m_rankEdit->setToolTip(tr("Ranks to show: a list such as 0-3,7. Empty shows every rank."));
    connect(m_rankEdit, &QLineEdit::textEdited, this, &LogInspector::applyRankText);
    row->addWidget(m_rankEdit);
    m_rankMenuButton = new QToolButton(bar);
    m_rankMenuButton->setArrowType(Qt::DownArrow);
    m_rankMenuButton->setToolTip(tr("Choose ranks"));
    connect(m_rankMenuButton, &QToolButton::clicked, this, &LogInspector::showRankMenu);
    row->addWidget(m_rankMenuButton);

    m_severityCombo = new QComboBox(bar);
    m_severityCombo->addItem(tr("All severities"), int(LogSeverity::Debug));
    m_severityCombo->addItem(tr("Info and above"), int(LogSeverity::Info));
    m_severityCombo->addItem(tr("Warnings and above"), int(LogSeverity::Warning));
    m_severityCombo->addItem(tr("Errors and above"), int(LogSeverity::Error));
    m_severityCombo->addItem(tr("Fatal only"), int(LogSeverity::Fatal));
    connect(m_severityCombo, &QComboBox::currentIndexChanged, this,
            [this] { m_proxy->setMinimumSeverity(LogSeverity(m_severityCombo->currentData().toInt())); });
    row->addWidget(m_severityCombo);

    m_patternEdit = new QLineEdit(bar);
    m_patternEdit->setObjectName(QStringLiteral("pattern"));
    m_patternEdit->setPlaceholderText(tr("Filter: regular expression"));
    m_patternEdit->setClearButtonEnabled(true);
    m_patternEdit->setMinimumWidth(220);
    m_patternTimer = new QTimer(this);
    m_patternTimer->setSingleShot(true);
    m_patternTimer->setInterval(kPatternDelayMs);
    connect(m_patternEdit, &QLineEdit::textChanged, m_patternTimer, qOverload<>(&QTimer::start));
    connect(m_patternTimer, &QTimer::timeout, this, [this] { m_proxy->setPattern(m_patternEdit->text()); });
    connect(m_proxy, &LogFilterProxy::patternErrorChanged, this, &LogInspector::showPatternError);
    row->addWidget(m_patternEdit, 1);

    m_ncclCheck = new QCheckBox(tr("NCCL only"), bar);
    m_ncclCheck->setToolTip(tr("Show only NCCL's own lines and PyTorch's ProcessGroupNCCL lines (tinted blue)"));
    connect(m_ncclCheck, &QCheckBox::toggled, m_proxy, &LogFilterProxy::setNcclOnly);
    row->addWidget(m_ncclCheck);
    m_collapseCheck = new QCheckBox(tr("Collapse ranks"), bar);
    m_collapseCheck->setToolTip(tr("Show a line printed by many ranks at once as one row, \"ranks 0-7: ...\""));
    connect(m_collapseCheck, &QCheckBox::toggled, this, [this] { setViewModel(); });
    row->addWidget(m_collapseCheck);

    m_firstErrorButton = new QPushButton(tr("First error"), bar);
    m_firstErrorButton->setIcon(style()->standardIcon(QStyle::SP_MessageBoxCritical));
    m_firstErrorButton->setToolTip(tr("Jump to the earliest error of any rank"));
    connect(m_firstErrorButton, &QPushButton::clicked, this, [this] { showFirstError(); });
    row->addWidget(m_firstErrorButton);

    m_olderButton = new QToolButton(bar);
    m_olderButton->setObjectName(QStringLiteral("olderLines"));
    m_olderButton->setText(tr("Older lines"));
    m_olderButton->setIcon(style()->standardIcon(QStyle::SP_ArrowUp));
    m_olderButton->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
    m_olderButton->setToolTip(tr("Read earlier lines of the ranks shown back from the run store"));
    m_olderButton->setEnabled(false);
    connect(m_olderButton, &QToolButton::clicked, this, [this] { loadOlderLines(); });
    row->addWidget(m_olderButton);

    m_followButton = new QToolButton(bar);
    m_followButton->setObjectName(QStringLiteral("follow"));
    m_followButton->setText(tr("Follow"));
    m_followButton->setIcon(style()->standardIcon(QStyle::SP_ArrowDown));
    m_followButton->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
    m_followButton->setCheckable(true);
    m_followButton->setChecked(true);
    m_followButton->setToolTip(
        tr("Keep the newest line in view. Scrolling up stops; scrolling to the bottom resumes."));
    connect(m_followButton, &QToolButton::toggled, this, &LogInspector::setFollowing);
    row->addWidget(m_followButton);
}

void LogInspector::setViewModel() {
    QItemSelectionModel* oldSelection = m_view->selectionModel();
    const bool collapsed = m_collapseCheck->isChecked();
    // The tree is kept only while it is shown: flat viewing costs no memory for groups.
    m_collapse->setSourceModel(collapsed ? m_proxy : nullptr);
    m_view->setModel(collapsed ? static_cast<QAbstractItemModel*>(m_collapse) : m_proxy);
    delete oldSelection;
    m_view->setRootIsDecorated(collapsed);

    QHeaderView* header = m_view->header();
    header->setStretchLastSection(true);
    header->setSectionResizeMode(QHeaderView::Interactive);
    const QFontMetrics metrics(font());
    const int indent = collapsed ? m_view->indentation() : 0; // the tree's branch marks share the first column
    m_view->setColumnWidth(LogModel::TimeColumn,
                           metrics.horizontalAdvance(QStringLiteral("00:00:00.000")) + 28 + indent);
    m_view->setColumnWidth(LogModel::RankColumn, metrics.horizontalAdvance(QStringLiteral("node-a-long:00")) + 16);
    m_view->setColumnWidth(LogModel::StreamColumn, metrics.horizontalAdvance(QStringLiteral("events")) + 16);
    m_view->setColumnWidth(LogModel::SeverityColumn, metrics.horizontalAdvance(QStringLiteral("warning")) + 16);
    if (m_following)
        QTimer::singleShot(0, this, &LogInspector::scrollToEnd);
}

bool LogInspector::isCollapsed() const {
    return m_collapseCheck->isChecked();
}

void LogInspector::setCollapsed(bool collapsed) {
    m_collapseCheck->setChecked(collapsed);
}

void LogInspector::setFollowing(bool following) {
    if (following == m_following)
        return;
    m_following = following;
    {
        const QSignalBlocker blocker(m_followButton);
        m_followButton->setChecked(following);
    }
    if (following) {
        m_model->releaseOlder(); // back at the newest lines: what was read back goes again
        scrollToEnd();
    }
}

void LogInspector::setOlderLinesSource(OlderLinesSource source) {
    m_olderSource = std::move(source);
    updateStatus();
}

int LogInspector::loadOlderLines(int perStream) {
    if (!m_olderSource)
        return 0;
    const QSet<int>& shown = m_proxy->ranks();
    QVector<RunLinePager::StreamStart> streams;
    for (const auto& [rank, stream] : m_model->streamsWithOlderLines()) {
        if (shown.isEmpty() || shown.contains(rank))
            streams.append({rank, stream, m_model->firstLineHeld(rank, stream)});
    }
    const QVector<RankLogLine> older = streams.isEmpty() ? QVector<RankLogLine>() : m_olderSource(streams, perStream);
    if (older.isEmpty())
        return 0;
    setFollowing(false);
    const int rowsBefore = m_model->rowCount();
    m_model->prependOlder(older);
    const int added = m_model->rowCount() - rowsBefore;
    if (added > 0) // the newest line read back at the bottom of the view, the lines held below it
        m_view->scrollTo(viewIndexForModelRow(added - 1), QAbstractItemView::PositionAtBottom);
    updateStatus();
    return added;
}

void LogInspector::scrollToEnd() {
    auto* scrollBar = m_view->verticalScrollBar();
    scrollBar->setValue(scrollBar->maximum());
}

void LogInspector::focusRank(int rank) {
    setRankFilter(rank < 0 ? QSet<int>() : QSet<int>{rank});
}

void LogInspector::setRankFilter(const QSet<int>& ranks) {
    m_rankEdit->setText(formatRankList(QVector<int>(ranks.cbegin(), ranks.cend())));
    m_rankEdit->setStyleSheet({});
    m_rankEdit->setToolTip(tr("Ranks to show: a list such as 0-3,7. Empty shows every rank."));
    m_proxy->setRanks(ranks);
}

void LogInspector::applyRankText(const QString& text) {
    QString error;
    const auto ranks = parseRankList(text, &error);
    m_rankEdit->setStyleSheet(ranks ? QString() : kInvalidStyle);
    m_rankEdit->setToolTip(ranks ? tr("Ranks to show: a list such as 0-3,7. Empty shows every rank.") : error);
    if (ranks)
        m_proxy->setRanks(*ranks); // an unfinished "0-" keeps the previous filter
}

void LogInspector::showRankMenu() {
    const std::unique_ptr<QMenu> menu(rankMenu(this));
    menu->exec(m_rankMenuButton->mapToGlobal(QPoint(0, m_rankMenuButton->height())));
}

QMenu* LogInspector::rankMenu(QWidget* parent) {
    std::set<int> known;
    for (int row = 0; row < m_model->rowCount(); ++row)
        known.insert(m_model->line(row).rank);
    auto* menu = new QMenu(parent);
    QAction* all = menu->addAction(tr("All ranks"));
    all->setCheckable(true);
    all->setChecked(m_proxy->ranks().isEmpty());
    connect(all, &QAction::triggered, this, [this] { setRankFilter({}); });
    menu->addSeparator();
    for (const int rank : known) {
        QAction* action = menu->addAction(m_model->hostRankLabel(rank));
        action->setCheckable(true);
        action->setChecked(m_proxy->ranks().contains(rank));
        connect(action, &QAction::toggled, this, [this, rank](bool on) {
            QSet<int> ranks = m_proxy->ranks();
            on ? void(ranks.insert(rank)) : void(ranks.remove(rank));
            setRankFilter(ranks);
        });
    }
    return menu;
}

void LogInspector::setMinimumSeverity(LogSeverity severity) {
    m_severityCombo->setCurrentIndex(m_severityCombo->findData(int(severity)));
}

void LogInspector::setPattern(const QString& pattern) {
    m_patternEdit->setText(pattern);
    m_patternTimer->stop();
    m_proxy->setPattern(pattern);
}

void LogInspector::showPatternError(const QString& error) {
    m_patternEdit->setStyleSheet(error.isEmpty() ? QString() : kInvalidStyle);
    m_patternError->setText(tr("Invalid regular expression: %1. The filter is not applied.").arg(error));
    m_patternError->setVisible(!error.isEmpty());
}

void LogInspector::setNcclOnly(bool ncclOnly) {
    m_ncclCheck->setChecked(ncclOnly);
}

int LogInspector::modelRowOf(const QModelIndex& viewIndex) const {
    QModelIndex proxyIndex = viewIndex;
    if (viewIndex.model() == m_collapse) {
        const int row = m_collapse->sourceRow(viewIndex);
        if (row < 0)
            return -1;
        proxyIndex = m_proxy->index(row, 0);
    }
    return m_proxy->mapToSource(proxyIndex).row();
}

QModelIndex LogInspector::viewIndexForModelRow(int row) const {
    const QModelIndex proxyIndex = m_proxy->mapFromSource(m_model->index(row, 0));
    if (!proxyIndex.isValid() || !isCollapsed())
        return proxyIndex;
    return m_collapse->indexForSourceRow(proxyIndex.row());
}

bool LogInspector::showFirstError() {
    int first = -1;
    for (int row = 0; row < m_model->rowCount(); ++row) {
        const LogModel::Line& line = m_model->line(row);
        if (line.severity < LogSeverity::Error)
            continue;
        if (first < 0) {
            first = row;
            continue;
        }
        const LogModel::Line& best = m_model->line(first);
        if (std::tie(line.receivedAt, line.rank, line.lineNumber) <
            std::tie(best.receivedAt, best.rank, best.lineNumber))
            first = row;
    }
    if (first < 0) {
        m_status->setText(statusText() + tr(" · no errors"));
        return false;
    }
    QModelIndex target = viewIndexForModelRow(first);
    if (!target.isValid()) { // hidden by a filter: the first error of the run matters more
        setRankFilter({});
        setNcclOnly(false);
        setPattern({});
        if (m_proxy->minimumSeverity() > m_model->line(first).severity)
            setMinimumSeverity(LogSeverity::Debug);
        target = viewIndexForModelRow(first);
    }
    if (!target.isValid())
        return false;
    setFollowing(false);
    if (target.parent().isValid())
        m_view->expand(target.parent());
    m_view->setCurrentIndex(target);
    m_view->scrollTo(target, QAbstractItemView::PositionAtCenter);
    m_view->setFocus();
    return true;
}

bool LogInspector::exportRankLog(int rank, const QString& path, QString* error) const {
    QSaveFile file(path);
    if (!file.open(QIODevice::WriteOnly)) {
        if (error)
            *error = tr("cannot write the log of rank %1 to %2: %3").arg(rank).arg(path, file.errorString());
        return false;
    }
    for (int row = 0; row < m_model->rowCount(); ++row) {
        const LogModel::Line& line = m_model->line(row);
        if (line.rank != rank)
            continue;
        file.write(line.text.toUtf8());
        file.write("\n", 1);
    }
    if (!file.commit()) {
        if (error)
            *error = tr("cannot write the log of rank %1 to %2: %3").arg(rank).arg(path, file.errorString());
        return false;
    }
    return true;
}

void LogInspector::showContextMenu(const QPoint& position) {
    const QModelIndex index = m_view->indexAt(position);
    const int row = index.isValid() ? modelRowOf(index) : -1;
    QMenu menu(this);
    if (index.isValid()) {
        const QString text = index.siblingAtColumn(LogModel::TextColumn).data().toString();
        connect(menu.addAction(tr("Copy line")), &QAction::triggered, this,
                [text] { QApplication::clipboard()->setText(text); });
    }
    if (row >= 0) {
        const int rank = m_model->line(row).rank;
        connect(menu.addAction(tr("Show only rank %1").arg(rank)), &QAction::triggered, this,
                [this, rank] { focusRank(rank); });
        connect(menu.addAction(tr("Export the log of rank %1…").arg(rank)), &QAction::triggered, this, [this, rank] {
            const QString path = QFileDialog::getSaveFileName(this, tr("Export the log of rank %1").arg(rank),
                                                              QStringLiteral("rank%1.log").arg(rank));
            QString error;
            if (!path.isEmpty() && !exportRankLog(rank, path, &error))
                m_status->setText(error);
        });
    }
    connect(menu.addAction(tr("Show all ranks")), &QAction::triggered, this, [this] { focusRank(-1); });
    menu.exec(m_view->viewport()->mapToGlobal(position));
}

QString LogInspector::statusText() const {
    const QLocale locale;
    QString text =
        tr("%1 lines (%2 shown)").arg(locale.toString(m_model->rowCount()), locale.toString(m_proxy->rowCount()));
    if (const qint64 older = m_model->olderLines(); older > 0)
        text += !m_olderSource ? tr(" · %1 older lines are in the run store on disk").arg(locale.toString(older))
                : m_model->canHoldOlder()
                    ? tr(" · %1 older lines in the run store: Older lines reads them back").arg(locale.toString(older))
                    : tr(" · %1 older lines in the run store; as many as the view holds were read back: Follow "
                         "lets them go")
                          .arg(locale.toString(older));
    return text;
}

void LogInspector::updateStatus() {
    m_status->setText(statusText());
    m_olderButton->setEnabled(m_olderSource && m_model->olderLines() > 0 && m_model->canHoldOlder());
}

} // namespace rankscope::gui

// SPDX-License-Identifier: MIT
#include "stackpanel.h"

#include <QDateTime>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QMenu>
#include <QPushButton>
#include <QTimer>
#include <QTreeView>
#include <QVBoxLayout>

#include <algorithm>

namespace rankscope::gui {

namespace {

constexpr int kMaxRankActions = 32; // a context menu, not a rank picker: the ranks column names the rest

QString noCaptureText() {
    return QStringLiteral("No stacks captured. They are taken when a hang is found, or with Capture stacks.");
}

} // namespace

StackPanel::StackPanel(QWidget* parent)
    : QWidget(parent), m_model(new StackTreeModel(this)), m_view(new QTreeView), m_capture(new QPushButton),
      m_summary(new QLabel), m_errors(new QLabel) {
    m_capture->setText(QStringLiteral("Capture stacks"));
    m_capture->setObjectName(QStringLiteral("captureStacksButton"));
    m_capture->setToolTip(QStringLiteral("Take every rank's native stacks now (gdb or eu-stack on its node)"));
    m_summary->setObjectName(QStringLiteral("stacksSummary"));
    m_summary->setText(noCaptureText());
    m_summary->setWordWrap(true);
    m_summary->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_errors->setObjectName(QStringLiteral("stacksErrors"));
    m_errors->setWordWrap(true);
    m_errors->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_errors->setStyleSheet(QStringLiteral("color: #c62828"));
    m_errors->hide();

    m_view->setObjectName(QStringLiteral("stacksView"));
    m_view->setModel(m_model);
    m_view->setUniformRowHeights(true);
    m_view->setIndentation(14); // stacks run 30 frames deep: the names need the width more than the steps do
    m_view->setAlternatingRowColors(true);
    m_view->setContextMenuPolicy(Qt::CustomContextMenu);
    m_view->header()->setStretchLastSection(false);
    m_view->header()->setSectionResizeMode(StackTreeModel::FrameColumn, QHeaderView::Stretch);
    m_view->setColumnWidth(StackTreeModel::RanksColumn, 130);
    m_view->setColumnWidth(StackTreeModel::LocationColumn, 190);
    m_view->setColumnWidth(StackTreeModel::WaitColumn, 90);
    m_view->setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Expanding);

    auto* top = new QHBoxLayout;
    top->addWidget(m_capture);
    top->addWidget(m_summary, 1);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    layout->addLayout(top);
    layout->addWidget(m_errors);
    layout->addWidget(m_view, 1);

    connect(m_capture, &QPushButton::clicked, this, &StackPanel::captureRequested);
    connect(m_view, &QTreeView::clicked, this, [this](const QModelIndex& index) {
        if (const int rank = rankForClick(index); rank >= 0)
            emit rankRequested(rank);
    });
    connect(m_view, &QTreeView::customContextMenuRequested, this, [this](const QPoint& pos) {
        const QModelIndex index = m_view->indexAt(pos);
        if (!index.isValid())
            return;
        QMenu* menu = contextMenuFor(index, this);
        menu->setAttribute(Qt::WA_DeleteOnClose);
        menu->popup(m_view->viewport()->mapToGlobal(pos));
    });
}

void StackPanel::setTree(const StackTree& tree, const QString& path) {
    m_model->setTree(tree);
    const QDateTime at = QDateTime::fromMSecsSinceEpoch(qint64(tree.capturedAt * 1000.0));
    QString summary = tree.isEmpty() ? QStringLiteral("No stacks in this capture")
                                     : QStringLiteral("Captured %1 · %2 rank(s)")
                                           .arg(at.toString(QStringLiteral("yyyy-MM-dd HH:mm:ss")))
                                           .arg(tree.ranks().size());
    if (!path.isEmpty())
        summary += QStringLiteral(" · %1").arg(QFileInfo(path).fileName());
    m_summary->setText(summary);
    m_summary->setToolTip(path);
    m_messages.clear();
    showErrors();
    // Open the main threads' paths down to where they wait: that is what a hang is about. Helper threads
    // stay folded under their outermost frame.
    expandMainPaths({});
    showFocusRanks();
}

void StackPanel::setFocusRanks(const QList<int>& ranks) {
    m_focusRanks = ranks;
    std::sort(m_focusRanks.begin(), m_focusRanks.end());
    showFocusRanks();
}

// The outermost main-thread frame whose ranks are the focus ranks, or some of them: where they part.
QModelIndex StackPanel::partingFrame(const QModelIndex& parent) const {
    for (int row = 0; row < m_model->rowCount(parent); ++row) {
        const QModelIndex child = m_model->index(row, StackTreeModel::FrameColumn, parent);
        if (!child.data(StackTreeModel::MainThreadRole).toBool())
            continue;
        const QList<int> ranks = child.data(StackTreeModel::RanksRole).value<QList<int>>();
        const auto inFocus = std::count_if(ranks.cbegin(), ranks.cend(), [this](int rank) {
            return std::binary_search(m_focusRanks.cbegin(), m_focusRanks.cend(), rank);
        });
        if (inFocus > 0 && inFocus == ranks.size())
            return child; // only focus ranks pass here: where they part from the others
        if (inFocus > 0)
            if (const QModelIndex found = partingFrame(child); found.isValid())
                return found;
    }
    return {};
}

void StackPanel::showFocusRanks() {
    if (m_focusRanks.isEmpty())
        return;
    const QModelIndex frame = partingFrame({});
    if (!frame.isValid())
        return;
    m_view->setCurrentIndex(frame);
    m_view->scrollTo(frame, QAbstractItemView::PositionAtTop);
    // Once more when the view has its size: a capture often comes while the window or the dock is laid out.
    QTimer::singleShot(0, m_view, [view = m_view, at = QPersistentModelIndex(frame)] {
        if (at.isValid())
            view->scrollTo(at, QAbstractItemView::PositionAtTop);
    });
}

void StackPanel::showEvent(QShowEvent* event) {
    QWidget::showEvent(event);
    showFocusRanks();
}

void StackPanel::expandMainPaths(const QModelIndex& parent) {
    for (int row = 0; row < m_model->rowCount(parent); ++row) {
        const QModelIndex child = m_model->index(row, StackTreeModel::FrameColumn, parent);
        if (!child.data(StackTreeModel::MainThreadRole).toBool())
            continue;
        m_view->expand(child);
        expandMainPaths(child);
    }
}

void StackPanel::addError(const QString& message) {
    m_messages.append(message);
    showErrors();
}

void StackPanel::showErrors() {
    QStringList lines = m_messages;
    const QMap<int, QString>& notes = m_model->tree().notes();
    for (auto it = notes.cbegin(); it != notes.cend(); ++it)
        lines.append(QStringLiteral("rank %1: %2").arg(it.key()).arg(it.value()));
    const QMap<int, QString>& errors = m_model->tree().errors();
    for (auto it = errors.cbegin(); it != errors.cend(); ++it)
        lines.append(QStringLiteral("rank %1: no stacks: %2").arg(it.key()).arg(it.value()));
    m_errors->setText(lines.join(QLatin1Char('\n')));
    m_errors->setVisible(!lines.isEmpty());
}

void StackPanel::clear() {
    m_model->clear();
    m_messages.clear();
    m_summary->setText(noCaptureText());
    m_summary->setToolTip(QString());
    showErrors();
}

void StackPanel::setCaptureEnabled(bool enabled) {
    m_capture->setEnabled(enabled);
}

int StackPanel::rankForClick(const QModelIndex& index) const {
    const QList<int> ranks = index.data(StackTreeModel::RanksRole).value<QList<int>>();
    return ranks.size() == 1 ? ranks.front() : -1;
}

QMenu* StackPanel::contextMenuFor(const QModelIndex& index, QWidget* parent) {
    auto* menu = new QMenu(parent);
    const QList<int> ranks = index.data(StackTreeModel::RanksRole).value<QList<int>>();
    for (const int rank : ranks.mid(0, kMaxRankActions))
        menu->addAction(QStringLiteral("Show rank %1's log").arg(rank), this,
                        [this, rank] { emit rankRequested(rank); });
    if (ranks.size() > kMaxRankActions)
        menu->addAction(QStringLiteral("(%1 more ranks)").arg(ranks.size() - kMaxRankActions))->setEnabled(false);
    return menu;
}

} // namespace rankscope::gui

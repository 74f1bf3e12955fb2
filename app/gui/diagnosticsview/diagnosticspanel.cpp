// SPDX-License-Identifier: MIT
#include "diagnosticspanel.h"

#include "core/arrivalorder.h"

#include <QColor>
#include <QFontDatabase>
#include <QHeaderView>
#include <QPainter>
#include <QStyledItemDelegate>

namespace rankscope::gui {

namespace {

const QColor kGrey(0x75, 0x75, 0x75);
const QColor kRed(0xc6, 0x28, 0x28);
const QColor kOrange(0xe6, 0x51, 0x00);

// A tree view measures its rows with no width (QTreeView::indexRowSizeHint), so word wrap never makes a row taller:
// a long finding was one line, cut off where it says the most. Measured here at its column's width instead.
class WrappingDelegate final : public QStyledItemDelegate {
public:
    explicit WrappingDelegate(QTreeView* view) : QStyledItemDelegate(view), m_view(view) {}

    QSize sizeHint(const QStyleOptionViewItem& option, const QModelIndex& index) const override {
        QStyleOptionViewItem atWidth(option);
        // The style wraps only within a valid rectangle: any height will do.
        atWidth.rect = QRect(0, 0, m_view->columnWidth(index.column()), 1);
        return QStyledItemDelegate::sizeHint(atWidth, index);
    }

private:
    QTreeView* m_view;
};

} // namespace

DiagnosticsPanel::DiagnosticsPanel(QWidget* parent) : QTreeWidget(parent) {
    setHeaderLabels({QStringLiteral("Finding"), QStringLiteral("Ranks"), QStringLiteral("What")});
    setRootIsDecorated(false);
    setWordWrap(true);
    setItemDelegate(new WrappingDelegate(this));
    setColumnWidth(KindColumn, 170); // "network warning (resolved)" unelided
    setColumnWidth(RanksColumn, 70);
    // A column's new width (the window's, the user's drag) changes how many lines a finding takes.
    connect(header(), &QHeaderView::sectionResized, this, [this] { scheduleDelayedItemsLayout(); });
    connect(this, &QTreeWidget::itemClicked, this,
            [this](QTreeWidgetItem* item) { emit rankRequested(item->data(RanksColumn, RankRole).toInt()); });
}

QTreeWidgetItem* DiagnosticsPanel::findingOf(const QString& key) const {
    for (int i = 0; i < topLevelItemCount(); ++i)
        if (topLevelItem(i)->data(KindColumn, KeyRole).toString() == key)
            return topLevelItem(i);
    return nullptr;
}

QTreeWidgetItem* DiagnosticsPanel::rowOf(const QString& key) {
    QTreeWidgetItem* item = findingOf(key);
    if (!item) {
        item = new QTreeWidgetItem(this);
        item->setData(KindColumn, KeyRole, key);
    }
    return item;
}

void DiagnosticsPanel::addDiagnoses(const QVector<Diagnosis>& diagnoses) {
    for (const Diagnosis& d : diagnoses) {
        QTreeWidgetItem* item = rowOf(d.key);
        QStringList ranks;
        for (const int rank : d.ranks)
            ranks << QString::number(rank);
        const int rank = d.ranks.value(0, -1);
        item->setText(KindColumn, diagnosisKindName(d.kind) + (d.resolved ? QStringLiteral(" (resolved)") : QString()));
        item->setText(RanksColumn, ranks.join(QLatin1Char(',')));
        item->setText(WhatColumn, d.message);
        item->setToolTip(WhatColumn, d.message);
        item->setData(RanksColumn, RankRole, rank);
        // Under a root cause, what its rank said last, one row per line, shown at once; a click on one shows the
        // rank's whole log, as a click on the finding does.
        qDeleteAll(item->takeChildren());
        for (const StoredLine& line : d.lastLines) {
            auto* said = new QTreeWidgetItem(item);
            if (item->childCount() == 1)
                said->setText(KindColumn, QStringLiteral("rank %1 said last").arg(rank));
            said->setText(WhatColumn, formatStoredLines({line}).trimmed());
            said->setToolTip(WhatColumn, said->text(WhatColumn));
            said->setFont(WhatColumn, QFontDatabase::systemFont(QFontDatabase::FixedFont));
            said->setForeground(KindColumn, kGrey);
            said->setData(RanksColumn, RankRole, rank);
        }
        item->setExpanded(true);
        item->setForeground(KindColumn, d.resolved ? kGrey : d.kind == DiagnosisKind::Straggler ? kOrange : kRed);
    }
}

void DiagnosticsPanel::addNote(const QString& key, const QString& kind, int rank, const QString& text) {
    QTreeWidgetItem* item = rowOf(key);
    item->setText(KindColumn, kind);
    item->setText(RanksColumn, rank >= 0 ? QString::number(rank) : QString());
    item->setText(WhatColumn, text);
    item->setToolTip(WhatColumn, text);
    item->setData(RanksColumn, RankRole, rank);
}

void DiagnosticsPanel::paintEvent(QPaintEvent* event) {
    QTreeWidget::paintEvent(event);
    if (topLevelItemCount() > 0)
        return;
    QPainter painter(viewport());
    painter.setPen(palette().color(QPalette::PlaceholderText));
    painter.drawText(viewport()->rect().adjusted(8, 6, -8, -6), Qt::AlignLeft | Qt::AlignTop | Qt::TextWordWrap,
                     QStringLiteral("No findings. The first failure's root cause, hung ranks, stragglers, diverging "
                                    "replicas and NCCL network problems appear here as they are found; a click opens "
                                    "the rank's log."));
}

} // namespace rankscope::gui

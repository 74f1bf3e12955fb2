// SPDX-License-Identifier: MIT
#include "ncclpanel.h"

#include <QHeaderView>
#include <QLabel>
#include <QSortFilterProxyModel>
#include <QTableView>
#include <QVBoxLayout>

namespace rankscope::gui {

NcclPanel::NcclPanel(QWidget* parent)
    : QWidget(parent), m_model(new NcclFactsModel(this)), m_proxy(new QSortFilterProxyModel(this)),
      m_view(new QTableView), m_note(new QLabel) {
    m_proxy->setSourceModel(m_model);
    m_proxy->setSortRole(NcclFactsModel::SortRole);
    m_view->setObjectName(QStringLiteral("ncclView"));
    m_view->setModel(m_proxy);
    m_view->setSortingEnabled(true);
    m_view->sortByColumn(NcclFactsModel::RankColumn, Qt::AscendingOrder);
    m_view->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_view->setWordWrap(false);
    m_view->verticalHeader()->hide();
    m_view->verticalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    m_view->horizontalHeader()->setStretchLastSection(true);
    m_view->horizontalHeader()->setSectionResizeMode(QHeaderView::Interactive);
    m_note->setObjectName(QStringLiteral("ncclNote"));
    m_note->setWordWrap(true);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    layout->addWidget(m_note);
    layout->addWidget(m_view, 1);
    connect(m_view, &QTableView::clicked, this,
            [this](const QModelIndex& index) { emit rankRequested(index.data(NcclFactsModel::RankRole).toInt()); });
    updateNote();
}

void NcclPanel::setFacts(const QVector<RankNcclFacts>& perRank) {
    const bool first = m_model->rowCount() == 0;
    m_model->setFacts(perRank);
    if (first && m_model->rowCount() > 0)
        m_view->resizeColumnsToContents();
    updateNote();
}

void NcclPanel::clear() {
    m_model->clear();
    updateNote();
}

void NcclPanel::updateNote() {
    if (m_model->rowCount() == 0) {
        // Not "yet": a finished run that had none will not get any.
        m_note->setText(QStringLiteral("No NCCL lines in the ranks' output. They are read when the job uses NCCL or "
                                       "its ranks get NCCL_DEBUG (INFO shows the most; a verbose debug run sets it)."));
        return;
    }
    bool differs = false;
    for (int row = 0; row < m_model->rowCount() && !differs; ++row)
        for (int column = 0; column < NcclFactsModel::ColumnCount && !differs; ++column)
            differs = m_model->index(row, column).data(NcclFactsModel::DiffersRole).toBool();
    m_note->setText(differs ? QStringLiteral("What NCCL printed on each rank. Highlighted: a value most ranks do not "
                                             "share (hover it for theirs).")
                            : QStringLiteral("What NCCL printed on each rank. The ranks agree on version, network, "
                                             "interfaces, transports and channels."));
}

} // namespace rankscope::gui
